package server

// EmbeddedEtcdEndpoints returns the client URLs of the server's embedded
// etcd (nil with external etcd), for tests that break it.
func EmbeddedEtcdEndpoints(s *Server) []string {
	if s.registry.EmbeddedEtcdErr() == nil {
		return nil
	}
	return s.registry.EtcdConfig().Endpoints
}
