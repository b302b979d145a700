package demo

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// headless starts the Chromium at exe, headless and quiet, for one test,
// and returns a browser context (closed when the test ends).
func headless(t *testing.T, ctx context.Context, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 2200))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}

// pollJS polls a boolean expression of the page in bctx every every until
// it holds, failing the test after limit with page() (what the page
// showed).
func pollJS(t *testing.T, bctx context.Context, what, expr string, limit, every time.Duration, page func() string) {
	t.Helper()
	end := time.Now().Add(limit)
	for {
		ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v; %s", what, limit, page())
		}
		time.Sleep(every)
	}
}

// running starts the demo of cfg and runs it until the test ends.
func running(t *testing.T, ctx context.Context, cfg Config) *Demo {
	t.Helper()
	d, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- d.Run(runCtx, nil) }()
	t.Cleanup(func() {
		stop()
		<-done
	})
	return d
}
