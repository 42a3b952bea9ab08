// Command gc-cascade is the load of hack/gc-cascade.sh: as the user of
// --kubeconfig it creates a Custom owner and --dependents ConfigMaps owned
// by it (16 concurrent creates), deletes the owner with the propagation
// policy --propagation, and reports how long the server's garbage
// collector took to delete every dependent (counted from a watch of them)
// and, with --pid, the server's RSS (VmRSS of /proc/PID/status, sampled
// every 50 ms) before and at its peak during the cascade. It talks only to
// the server of the kubeconfig and stops by itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gc-cascade:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the user that loads the server (required)")
	namespace := flag.String("namespace", "default", "namespace of the objects")
	dependents := flag.Int("dependents", 10000, "ConfigMaps owned by the owner")
	propagation := flag.String("propagation", "Background", "the owner's deletion: Background or Foreground")
	pid := flag.Int("pid", 0, "the server's process, whose RSS is sampled (0: not sampled)")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	byClient := flag.Bool("by-client", false, "for comparison (a server without the collector): delete the dependents from here, 8 at a time, then the owner")
	flag.Parse()
	if *kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	customs := dyn.Resource(schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}).Namespace(*namespace)
	name := fmt.Sprintf("gc-owner-%d", time.Now().UnixNano())
	owner, err := customs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test/v1", "kind": "Custom", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"replicas": int64(1)},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create the owner: %w", err)
	}
	ref := metav1.OwnerReference{APIVersion: "test/v1", Kind: "Custom", Name: name, UID: owner.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}

	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < *dependents; i = int(next.Add(1)) - 1 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("%s-%05d", name, i), Labels: map[string]string{"gc-owner": name}, OwnerReferences: []metav1.OwnerReference{ref},
				}, Data: map[string]string{"i": strconv.Itoa(i)}}
				if _, err := kube.CoreV1().ConfigMaps(*namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("create the dependents: %w", err)
	}
	fmt.Printf("created %d dependents in %s\n", *dependents, time.Since(start).Round(time.Millisecond))

	list, err := kube.CoreV1().ConfigMaps(*namespace).List(ctx, metav1.ListOptions{LabelSelector: "gc-owner=" + name, Limit: 1})
	if err != nil {
		return err
	}
	w, err := kube.CoreV1().ConfigMaps(*namespace).Watch(ctx, metav1.ListOptions{LabelSelector: "gc-owner=" + name, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	before := rss(*pid)
	var peak atomic.Int64
	peak.Store(before)
	stopSampling := make(chan struct{})
	if *pid != 0 {
		go func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stopSampling:
					return
				case <-t.C:
					if r := rss(*pid); r > peak.Load() {
						peak.Store(r)
					}
				}
			}
		}()
	}

	start = time.Now()
	if *byClient {
		*propagation = "deleted by the client, 8 at a time"
		next.Store(0)
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < *dependents; i = int(next.Add(1)) - 1 {
					if err := kube.CoreV1().ConfigMaps(*namespace).Delete(ctx, fmt.Sprintf("%s-%05d", name, i), metav1.DeleteOptions{}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		go func() {
			wg.Wait()
			close(errs)
		}()
		defer func() {
			if err := <-errs; err != nil {
				fmt.Fprintln(os.Stderr, "gc-cascade: delete a dependent:", err)
			}
		}()
	}
	opts := metav1.DeleteOptions{}
	if !*byClient {
		opts.PropagationPolicy = ptr.To(metav1.DeletionPropagation(*propagation))
	}
	if err := customs.Delete(ctx, name, opts); err != nil {
		return fmt.Errorf("delete the owner: %w", err)
	}
	var first time.Duration
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	for deleted := 0; deleted < *dependents; {
		select {
		case <-progress.C:
			fmt.Printf("  %s: %d deleted\n", time.Since(start).Round(time.Second), deleted)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("the watch ended after %d deletions", deleted)
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("the watch: %v", ev.Object)
			}
			if ev.Type == watch.Deleted {
				if deleted == 0 {
					first = time.Since(start)
				}
				deleted++
			}
		case <-ctx.Done():
			return fmt.Errorf("%d of %d dependents deleted: %w", deleted, *dependents, ctx.Err())
		}
	}
	took := time.Since(start)
	close(stopSampling)
	fmt.Printf("deletion (%s) of %d dependents: %s (first deletion after %s), %.0f deletions/s\n",
		*propagation, *dependents, took.Round(time.Millisecond), first.Round(time.Millisecond), float64(*dependents)/took.Seconds())
	if *pid != 0 {
		fmt.Printf("server RSS: %d MiB before the cascade, %d MiB at its peak during it\n", before>>20, peak.Load()>>20)
	}
	return nil
}

// rss returns VmRSS of process pid in bytes (0 if unknown).
func rss(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
