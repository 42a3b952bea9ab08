package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/customapi/customapi/pkg/admission"
)

// earlySyncWait bounds how long startEarly waits for its informers to
// sync before New goes on anyway (what reads them then waits for them
// itself, and /readyz with it). Through the pipe and the watch caches they
// sync in milliseconds.
const earlySyncWait = 5 * time.Second

// earlyInformers is the stop of the informers startEarly starts.
type earlyInformers struct {
	done chan struct{}
	once *sync.Once
	// shutdowns wait for the informers once done is closed.
	shutdowns []func()
}

func newEarlyInformers() earlyInformers {
	return earlyInformers{done: make(chan struct{}), once: &sync.Once{}}
}

// stop stops the informers, once.
func (e *earlyInformers) stop() { e.once.Do(func() { close(e.done) }) }

// shutdown waits for the informers stop stopped.
func (e *earlyInformers) shutdown() {
	for _, f := range e.shutdowns {
		f()
	}
}

// startEarly serves /openapi/v2 and /openapi/v3 (installOpenAPI), the v3
// documents built while the informers sync, and starts, once the server
// serves through its pipe, the informers that would otherwise start in the
// generic server's post-start hooks at Run, through the loopback address:
// the admission plugins' (admission.Informers) and the apiextensions
// server's (CRDs); it waits for them to sync, at most earlySyncWait. Both
// come before the admission chain, whose mutating policies' type converter
// reads /openapi/v3 from its start (and would otherwise fail, and log it,
// until its next read 5 s later). What reads the informers checks their
// sync when it starts and then every 100 ms (client-go's
// WaitForCacheSync, the policy plugins' compiling of their policies,
// apiextensions' crd-informer-synced hook): informers synced before then
// save up to 100 ms of every start for each of them. They run until
// early.stop (the start of Run's shutdown, or release). Errors: ctx's.
func (s *Server) startEarly(ctx context.Context) error {
	var openAPI sync.WaitGroup
	openAPI.Go(func() {
		s.openAPIV2 = installOpenAPI(s.generic, s.config.Generic.OpenAPIConfig, s.config.Generic.OpenAPIV3Config)
	})
	defer openAPI.Wait()
	informers := admission.Informers(s.admission.config)
	if f := s.admission.config.Informers; f != nil {
		f.Start(s.early.done)
		s.early.shutdowns = append(s.early.shutdowns, f.Shutdown)
	}
	if s.customResources != nil {
		informers = append(informers, s.customResources.Informers(s.early.done)...)
		s.early.shutdowns = append(s.early.shutdowns, s.customResources.Shutdown)
	}
	err := utilwait.PollUntilContextTimeout(ctx, 2*time.Millisecond, earlySyncWait, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(informers, func(i cache.SharedIndexInformer) bool { return !i.HasSynced() }), nil
	})
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
		return fmt.Errorf("server: start-up abandoned: %w", ctxErr)
	}
	return nil
}
