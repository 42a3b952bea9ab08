package server

// EmbeddedEtcdEndpoints returns the client URLs of the server's embedded
// etcd (nil with external etcd), for tests that break it.
func EmbeddedEtcdEndpoints(s *Server) []string {
	if s.etcd == nil {
		return nil
	}
	return s.etcd.Endpoints()
}
