// Command etcdmain runs a one-member embedded etcd (internal/etcdrun) in a
// process of its own, so that internal/fleetscale reads etcd's CPU time
// and memory apart from the test's. It prints "etcdmain: endpoint
// HOST:PORT" once etcd is ready (its /metrics is on that address too) and
// serves until SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ecntune/ecntune/internal/etcdrun"
)

func main() {
	dir := flag.String("dir", "", "data directory (required)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "etcdmain: -dir is required")
		os.Exit(2)
	}
	c, err := etcdrun.Start(*dir, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdmain:", err)
		os.Exit(1)
	}
	fmt.Printf("etcdmain: endpoint %s\n", c.Endpoints()[0])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	<-ctx.Done()
	stop()
	c.Close()
}
