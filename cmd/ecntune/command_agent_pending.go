package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/web"
)

// agentPendingOpts are the flags of "ecntune agent pending".
type agentPendingOpts struct {
	url, cfgPath, gnmicDir string
	asJSON                 bool
}

func newAgentPendingCmd() *cobra.Command {
	var o agentPendingOpts
	cmd := &cobra.Command{
		Use:   "pending",
		Short: "List the changes an agent in approve mode waits to have approved",
		Long: `List the changes a running agent in approve mode (approve: true in a closed-loop
configuration) holds back until an operator approves them: per queue, the setting now and the
one proposed, since when, why, and whether it was approved. With --gnmic DIR, also write the
pending plan as the agent's very Set requests in protobuf text format (DIR/TARGET-N.textproto,
one per Set request, prefix target and all, in the order the agent would send them) and print
the gnmic commands that send them unchanged (gnmic set --set-proto-request-file, gnmic v0.44.1
or later; from v0.36 to v0.44.0 the flag is --proto-file): the plan can be reviewed and applied
by hand, without the agent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentPending(cmd, o) },
	}
	cmd.Flags().StringVar(&o.url, "url", "", "the running agent's HTTP address (http://HOST:PORT)")
	cmd.Flags().StringVar(&o.cfgPath, "config", "", "the running agent's configuration (its metrics address)")
	cmd.Flags().StringVar(&o.gnmicDir, "gnmic", "", "write the pending plan as Set requests for gnmic (prototext) into DIR")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the pending changes as JSON lines (one object per change)")
	return cmd
}

// liveAgentURL is the base URL of a running agent from --url or from
// --config's metrics address.
func liveAgentURL(u, cfgPath string) (string, error) {
	switch {
	case u != "" && cfgPath != "":
		return "", errors.New("--url or --config: give one")
	case u != "":
		return agentBaseURL(u), nil
	case cfgPath != "":
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return "", err
		}
		if cfg.Metrics == "" {
			return "", fmt.Errorf("%s: metrics is empty, so the agent serves no HTTP: give --url", cfgPath)
		}
		return agentBaseURL(cfg.Metrics), nil
	}
	return "", errors.New("--url or --config (a running agent) is required")
}

// agentCall sends one request to a running agent and decodes its JSON
// answer into v; an answer other than 200 is an error with its body.
func agentCall(ctx context.Context, req *http.Request, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if errors.Is(err, syscall.ECONNREFUSED) {
		// pending and approve talk to the closed loop as it runs
		return fmt.Errorf("no agent answers at %s: is it running (with this metrics address)? %s asks the running agent: %w", req.URL.Host, req.URL.Path, err)
	}
	if err != nil {
		return fmt.Errorf("agent at %s: %w", req.URL.Host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("agent at %s: %s: %s", req.URL.Host, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("agent at %s: %w", req.URL.Host, err)
	}
	return nil
}

func runAgentPending(cmd *cobra.Command, o agentPendingOpts) error {
	base, err := liveAgentURL(o.url, o.cfgPath)
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/pending", nil)
	var ps []core.Pending
	if err := agentCall(cmd.Context(), req, &ps); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.asJSON {
		enc := json.NewEncoder(out)
		for _, p := range ps {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
	} else if err := printPending(out, ps); err != nil {
		return err
	}
	if o.gnmicDir == "" {
		return nil
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/pending/gnmic", nil)
	var files map[string][]web.GnmicFile
	if err := agentCall(cmd.Context(), req, &files); err != nil {
		return err
	}
	addrs := map[string]string{}
	if o.cfgPath != "" {
		cfg, err := config.Load(o.cfgPath)
		if err != nil {
			return err
		}
		for _, t := range cfg.Targets {
			addrs[t.Name] = t.Address + gnmicConnFlags(t)
		}
	}
	return writeGnmicFiles(cmd.ErrOrStderr(), o.gnmicDir, files, addrs)
}

// printPending prints one row per pending change.
func printPending(w io.Writer, ps []core.Pending) error {
	if len(ps) == 0 {
		fmt.Fprintln(w, "nothing pending")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tPLAN\tKIND\tNOW → PROPOSED\tSINCE\tAPPROVED\tREASON")
	for _, p := range ps {
		appr := "-"
		if p.Approved {
			appr = "by " + p.ApprovedBy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s → %s\t%s\t%s\t%s\n", p.Key, p.Plan, p.Kind, fmtSetting(p.Old), fmtSetting(p.New),
			time.Unix(0, p.SinceNs).UTC().Format(time.RFC3339), appr, p.Reason)
	}
	return tw.Flush()
}

// gnmicConnFlags are the gnmic flags that connect as the agent does to
// target t: TLS (insecure, skip-verify, the CA and client certificate)
// and the user; the password is not printed (gnmic reads it from
// $GNMIC_PASSWORD, or asks). A path with a space is quoted.
func gnmicConnFlags(t config.Target) string {
	var b strings.Builder
	arg := func(flag, v string) {
		if v != "" {
			b.WriteString(" " + flag + " " + shellQuote(v))
		}
	}
	if t.Insecure {
		b.WriteString(" --insecure")
	}
	if t.SkipVerify {
		b.WriteString(" --skip-verify")
	}
	arg("--tls-ca", t.TLSCA)
	arg("--tls-cert", t.TLSCert)
	arg("--tls-key", t.TLSKey)
	arg("-u", t.Username)
	return b.String()
}

// shellQuote quotes v for a shell when it holds a space or a quote.
func shellQuote(v string) string {
	if strings.ContainsAny(v, " \t'\"$") {
		return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
	}
	return v
}

// writeGnmicFiles writes each target's Set requests into dir as prototext
// files and prints the gnmic command that sends them unchanged (gnmic set
// --set-proto-request-file: the prefix target is in the file; --target is
// not needed, and gnmic would not read it with a request file), with the
// target's address from addrs (a placeholder where it has none: the
// agent's configuration has it).
func writeGnmicFiles(w io.Writer, dir string, files map[string][]web.GnmicFile, addrs map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range slices.Sorted(maps.Keys(files)) {
		addr := addrs[t]
		if addr == "" {
			addr = "ADDRESS_OF_" + t
		}
		args := []string{"gnmic", "-a", addr, "set"}
		for i, f := range files[t] {
			// the target's name as the agent sent it, made a file name
			// (a name with ../ wrote the file outside dir)
			name := filepath.Join(dir, fmt.Sprintf("%s-%d.textproto", fileSafe(t), i+1))
			if err := os.WriteFile(name, []byte(f.Prototext), 0o644); err != nil {
				return err
			}
			args = append(args, "--set-proto-request-file", shellQuote(name))
		}
		fmt.Fprintln(w, strings.Join(args, " "))
	}
	return nil
}
