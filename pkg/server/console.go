package server

import "github.com/customapi/customapi/pkg/console"

// installConsole serves the web console (package console) at each of
// console.Paths, behind the whole handler chain, when
// options.ServingOptions.Console is set, and lets every client, anonymous
// ones included, GET and HEAD those paths (options.Probes.AllowAssets):
// the page holds no data, and the API requests it makes carry the user's
// own token.
func (s *Server) installConsole() {
	if !s.config.Options.Serving.Console {
		return
	}
	h := console.Handler()
	paths := console.Paths()
	for _, p := range paths {
		s.generic.Handler.NonGoRestfulMux.Handle(p, h)
	}
	s.config.Probes.AllowAssets(paths)
}
