package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/core"
)

// agentApproveOpts are the flags of "ecntune agent approve".
type agentApproveOpts struct {
	url, cfgPath, by string
	queues, plans    []string
	all              bool
}

func newAgentApproveCmd() *cobra.Command {
	var o agentApproveOpts
	cmd := &cobra.Command{
		Use:   "approve (--queue TARGET/PORT/qN... | --all)",
		Short: "Approve pending changes of an agent in approve mode",
		Long: `Approve the pending change of each --queue (or of every queue with --all) of a running agent in
approve mode: each is applied at the agent's next interval where its guard still proposes that
very setting (within 10 intervals), and its audit entry names who approved it. A change the
guard proposed within the last 10 intervals can be approved, listed as pending now or not (a
proposal whose confidence hovers at the bar comes and goes); a queue with no proposal in that
window is an error, and nothing is approved then. 'ecntune agent pending' lists what
waits, each change with its plan ID: give the IDs you reviewed with --plan, and only those very
changes are approved (if the guard now proposes another setting for a queue, or, with --all, the
pending set is not the one reviewed, nothing is approved and the error says what is pending now).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentApprove(cmd, o) },
	}
	cmd.Flags().StringVar(&o.url, "url", "", "the running agent's HTTP address (http://HOST:PORT)")
	cmd.Flags().StringVar(&o.cfgPath, "config", "", "the running agent's configuration (its metrics address)")
	cmd.Flags().StringArrayVar(&o.queues, "queue", nil, "a queue to approve, TARGET/PORT/qN (repeat)")
	cmd.Flags().BoolVar(&o.all, "all", false, "approve every pending change")
	cmd.Flags().StringArrayVar(&o.plans, "plan", nil, "the plan ID of a change you reviewed ('agent pending' lists them; repeat): approve only those")
	cmd.Flags().StringVar(&o.by, "by", defaultOperator(), "who approves (in the audit entry of each change)")
	return cmd
}

func runAgentApprove(cmd *cobra.Command, o agentApproveOpts) error {
	if o.all == (len(o.queues) > 0) {
		return errors.New("give --queue TARGET/PORT/qN (repeat) or --all")
	}
	base, err := liveAgentURL(o.url, o.cfgPath)
	if err != nil {
		return err
	}
	form := url.Values{"by": {o.by}, "queue": o.queues}
	for _, p := range o.plans {
		for _, f := range strings.Split(p, ",") {
			if f = strings.TrimSpace(f); f != "" {
				form.Add("plan", f)
			}
		}
	}
	if o.all {
		form.Set("all", "true")
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/approve", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var ps []core.Pending
	if err := agentCall(cmd.Context(), req, &ps); err != nil {
		return err
	}
	if err := printPending(cmd.OutOrStdout(), ps); err != nil {
		return err
	}
	if len(o.plans) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "approved what was pending when the agent got the approval (above); give --plan ID... to approve only the changes you reviewed")
	}
	return nil
}
