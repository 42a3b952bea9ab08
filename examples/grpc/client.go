package relay

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Client is a Relay client on a connection of its own: the generated
// RelayClient methods (Get, Watch) with Codec installed on every call.
// Close it to release the connection.
type Client struct {
	RelayClient
	conn *grpc.ClientConn
}

// Dial returns a client of the Relay service at target ("127.0.0.1:8090",
// or any grpc.NewClient target). The connection is made on the first call,
// not here. It is plaintext unless opts give transport credentials
// (grpc.WithTransportCredentials; later options win): the example serves
// on loopback without TLS. Errors: an invalid target or options.
func Dial(target string, opts ...grpc.DialOption) (*Client, error) {
	all := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(Codec{})),
	}, opts...)
	conn, err := grpc.NewClient(target, all...)
	if err != nil {
		return nil, err
	}
	return &Client{RelayClient: NewRelayClient(conn), conn: conn}, nil
}

// Close closes the connection; calls in progress end with Canceled.
func (c *Client) Close() error { return c.conn.Close() }
