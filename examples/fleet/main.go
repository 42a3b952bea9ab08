package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	opts := server.NewOptions()
	opts.DataDir = "fleet-data"
	opts.AddFlags(pflag.CommandLine)
	pflag.Parse()

	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	srv, err := server.New(ctx, cfg.Complete(), fleetapi.Devices)
	if err != nil {
		return err
	}
	go func() {
		<-srv.ReadyNotify()
		fmt.Printf("fleet API ready at %s; try:\n  kubectl --kubeconfig %s get devices\n", cfg.URL, cfg.KubeconfigPath)
	}()
	return srv.Run(ctx)
}
