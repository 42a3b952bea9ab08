package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// earlySyncWait bounds how long startInformers waits for its informers
// to sync before New goes on anyway (what reads them then waits for them
// itself, and /readyz with it). Through the in-process door and the
// watch caches they sync in milliseconds.
const earlySyncWait = 5 * time.Second

// startInformers starts, once the server serves in process, the informers
// that would otherwise start in the generic server's post-start hooks at
// Run, through the loopback address: the admission plugins'
// (admissionInformers) and the apiextensions server's (CRDs), and waits
// for them to sync, at most earlySyncWait. What reads them checks their
// sync when it starts and then every 100 ms (client-go's
// WaitForCacheSync, the policy plugins' compiling of their policies,
// apiextensions' crd-informer-synced hook): informers synced before
// then save up to 100 ms of every start for each of them. They run until
// stopEarlyInformers (the start of Run's shutdown, or release). Errors:
// ctx's.
func (s *Server) startInformers(ctx context.Context) error {
	informers := s.admissionInformers()
	if s.admissionFactory != nil {
		s.admissionFactory.Start(s.earlyStop)
	}
	if s.customResources != nil {
		informers = append(informers, s.customResources.informer.Informer())
		s.customResources.informers.Start(s.earlyStop)
	}
	err := utilwait.PollUntilContextTimeout(ctx, 2*time.Millisecond, earlySyncWait, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(informers, func(i cache.SharedIndexInformer) bool { return !i.HasSynced() }), nil
	})
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
		return fmt.Errorf("server: start-up abandoned: %w", ctxErr)
	}
	return nil
}

// stopEarlyInformers stops the informers startInformers started, once.
func (s *Server) stopEarlyInformers() {
	s.earlyStopOnce.Do(func() { close(s.earlyStop) })
}

// shutdownEarlyInformers waits for the informers stopEarlyInformers
// stopped.
func (s *Server) shutdownEarlyInformers() {
	if s.admissionFactory != nil {
		s.admissionFactory.Shutdown()
	}
	if s.customResources != nil && s.customResources.informers != nil {
		s.customResources.informers.Shutdown()
	}
}
