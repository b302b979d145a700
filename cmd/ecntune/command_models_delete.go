package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/models"
)

func newModelsDeleteCmd(f *modelsFlags) *cobra.Command {
	var force, checkpoint bool
	cmd := &cobra.Command{
		Use:   "delete REF | --checkpoint RUN",
		Short: "Delete a model version (the promoted one only with --force) or an unfinished run's checkpoint",
		Args:  oneArg("model REF", "to delete (NAME@N), or with --checkpoint the RUN whose checkpoint to drop"),
		RunE: func(c *cobra.Command, args []string) error {
			return f.with(false, true, false, func(r *models.Registry) error {
				if checkpoint {
					return deleteCheckpoint(c.OutOrStdout(), r, args[0])
				}
				m, err := r.Delete(args[0], force)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "deleted %s (id %d)\n", m.Ref(), m.ID)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "also delete the promoted version (its name is then left without one)")
	cmd.Flags().BoolVar(&checkpoint, "checkpoint", false, "delete the checkpoint of training run RUN (its next train starts afresh)")
	cmd.MarkFlagsMutuallyExclusive("force", "checkpoint")
	return cmd
}

// deleteCheckpoint removes run's checkpoint, or says there is none.
func deleteCheckpoint(w io.Writer, r *models.Registry, run string) error {
	cps, err := r.Checkpoints()
	if err != nil {
		return err
	}
	for _, cp := range cps {
		if cp.Run == run {
			if who, held := runLockHolder(r.Path(), run); held {
				// its trainer's next checkpoint then failed, and the run
				// ended with nothing saved
				return fmt.Errorf("run %s is training now (%s): stop it first (Ctrl-C keeps a checkpoint), then delete its checkpoint", run, who)
			}
			if err := r.DeleteCheckpoint(run); err != nil {
				return err
			}
			what := strconv.Itoa(cp.Step) + " episodes"
			if cp.Damaged {
				what = "damaged"
			}
			fmt.Fprintf(w, "deleted the checkpoint of run %s (%s)\n", run, what)
			return nil
		}
	}
	return fmt.Errorf("no checkpoint of a training run %s in %s", run, r.Path())
}
