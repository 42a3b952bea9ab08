// Command customapi serves Kubernetes-style API objects from etcd.
//
//	customapi serve     # HTTPS API on 127.0.0.1:6443, embedded etcd in ./customapi-data
//	customapi version
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
