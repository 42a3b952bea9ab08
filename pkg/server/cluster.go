package server

import (
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/customapi/customapi/pkg/cluster"
)

// addCluster serves, on a server of a highly available cluster
// (options.Config.Cluster), the join requests of new servers
// (cluster.Handler at cluster.JoinPath, behind the handler chain: the join
// token's secret authenticates cluster.JoinersGroup, authorized for that
// path alone) and runs the promotion of learners (cluster.RunPromoter)
// while the server runs. A single server does neither.
func (s *Server) addCluster() error {
	if s.config.Cluster == nil {
		return nil
	}
	o := s.config.Options
	remove := commandName(o.CommandName) + " cluster remove NAME --data-dir <a server's data dir>"
	s.generic.Handler.NonGoRestfulMux.Handle(cluster.JoinPath, cluster.Handler(o.DataDir, s.registry.EtcdConfig(), remove))
	return s.generic.AddPostStartHook("customapi-cluster-promoter", func(hc genericapiserver.PostStartHookContext) error {
		go cluster.RunPromoter(hc, s.registry.EtcdConfig())
		return nil
	})
}

// commandName is the program's name in messages ("customapi" for "").
func commandName(name string) string {
	if name == "" {
		return "customapi"
	}
	return name
}
