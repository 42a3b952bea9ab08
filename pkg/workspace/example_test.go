package workspace_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/workspace"
)

// A workspace is a key segment in etcd, a path prefix over HTTP and a
// context value in process.
func Example() {
	fmt.Println(workspace.Key("/test/customs", "/test/customs/ns1/a", "team-a"))

	cfg := workspace.Config(&rest.Config{Host: "https://127.0.0.1:6443"}, "team-a")
	fmt.Println(cfg.Host)

	ctx := workspace.NewContext(context.Background(), "team-a")
	fmt.Println(workspace.FromContext(ctx), workspace.FromContext(context.Background()))
	// Output:
	// /test/customs/%team-a/ns1/a
	// https://127.0.0.1:6443/clusters/team-a
	// team-a default
}
