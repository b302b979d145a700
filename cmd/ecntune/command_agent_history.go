package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent"
)

func newAgentHistoryCmd() *cobra.Command {
	var (
		db, target, since string
		asJSON            bool
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the agent's audit log of changes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := parseSince(since, time.Now())
			if err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			j, err := openExistingJournal(db)
			if err != nil {
				return err
			}
			defer j.Close()
			var fromNs int64
			if !from.IsZero() {
				fromNs = from.UnixNano()
			}
			es, err := j.Entries(target, fromNs)
			if err != nil {
				return err
			}
			return printHistory(cmd.OutOrStdout(), es, asJSON)
		},
	}
	cmd.Flags().StringVar(&db, "db", "agent.db", "agent database")
	cmd.Flags().StringVar(&target, "target", "", "only this target")
	cmd.Flags().StringVar(&since, "since", "", "only changes since a duration ago (10m) or an RFC 3339 time")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON lines")
	return cmd
}

func printHistory(w io.Writer, es []agent.AuditEntry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range es {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	if len(es) == 0 {
		fmt.Fprintln(w, "no changes recorded")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tQUEUE\tKIND\tSTATE\tOLD\tNEW\tMODEL\tREASON")
	for _, e := range es {
		reason := e.Reason
		if e.Error != "" {
			reason += " [" + e.Error + "]"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq,
			time.Unix(0, e.TimeNs).UTC().Format("2006-01-02T15:04:05.000Z"), e.Key, e.Kind, e.State,
			fmtSetting(e.Old), fmtSetting(e.New), e.Model, strings.ReplaceAll(reason, "\t", " "))
	}
	return tw.Flush()
}
