package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/rl"
)

// modelsDefaultDB is the registry file used when neither --db nor
// $ECNTUNE_DB names one: the same default the policies read.
const modelsDefaultDB = "ecntune.db"

func init() { rootCmd.AddCommand(newModelsCmd()) }

// modelsDBPath picks the registry file: the flag, then $ECNTUNE_DB, then
// ecntune.db in the current directory.
func modelsDBPath(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("ECNTUNE_DB"); env != "" {
		return env
	}
	return modelsDefaultDB
}

// policyResolver resolves policy specs, loading "model:NAME" from the
// registry file db (or, when db is "", from modelsDBPath's default).
func policyResolver(db string) policy.Resolver {
	path := modelsDBPath(db)
	return policy.Resolver{Models: func(ref string) (models.Model, error) { return models.Load(path, ref) }}
}

// registryModelInfo reads the metadata (not the weights) of a model from
// the registry file db (or modelsDBPath's default).
func registryModelInfo(db string) func(ref string) (models.Model, error) {
	return func(ref string) (m models.Model, err error) {
		err = withRegistry(modelsDBPath(db), models.Options{ReadOnly: true}, func(r *models.Registry) error {
			m, err = r.Info(ref) // metadata only: the algorithm is all that is needed
			return err
		})
		return m, err
	}
}

// newModelsCmd builds the "models" command tree (a fresh one per call, so
// tests get fresh flags).
func newModelsCmd() *cobra.Command {
	var (
		db      string
		timeout time.Duration
	)
	// vetSpec, unless --force, refuses to promote a model this build
	// cannot load (the agent would refuse it at its next start).
	var force bool
	vetSpec := func(m models.Model) error {
		if force {
			return nil
		}
		if err := models.CheckSpec(m, env.SpecVersion, env.ActionSpecVersion); err != nil {
			return fmt.Errorf("%w (--force promotes it anyway, for a fleet running the release that speaks it)", err)
		}
		return nil
	}
	with := func(ro, mustExist bool, fn func(r *models.Registry) error) error {
		return withRegistry(modelsDBPath(db), models.Options{ReadOnly: ro, MustExist: mustExist, Timeout: timeout, Vet: vetSpec}, fn)
	}

	cmd := &cobra.Command{
		Use:   "models",
		Short: "List, inspect, promote, roll back, export, import and delete trained models",
		Long: `models manages the model registry, a bbolt file holding trained policies with
their provenance (algorithm, spec versions, hyper-parameters, scenarios, seed,
evaluation, weights sha256). The file is --db, else $ECNTUNE_DB, else ` + modelsDefaultDB + `.

References: NAME (the promoted version, else the latest), NAME@N,
NAME@promoted, NAME@latest, or the numeric id.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "registry file (default $ECNTUNE_DB or "+modelsDefaultDB+")")
	cmd.PersistentFlags().DurationVar(&timeout, "lock-timeout", models.DefaultTimeout, "how long to wait for another process holding the registry")

	list := &cobra.Command{
		Use:   "list [NAME]",
		Short: "List model versions as a table",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return with(true, true, func(r *models.Registry) error {
				ms, err := r.List(name)
				if err != nil {
					return err
				}
				cps, err := r.Checkpoints()
				if err != nil {
					return err
				}
				w := c.OutOrStdout()
				if len(ms) == 0 {
					fmt.Fprintf(w, "no models in %s\n", r.Path())
				} else if err := modelsTable(w, ms); err != nil {
					return err
				}
				return checkpointsTable(w, cps, name)
			})
		},
	}

	show := &cobra.Command{
		Use:   "show REF",
		Short: "Print a model version's metadata as JSON and check its weights",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return with(true, true, func(r *models.Registry) error {
				m, err := r.Info(args[0])
				if err != nil {
					return err
				}
				b, err := json.MarshalIndent(m, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "%s\n", b)
				if err := models.CheckSpec(m, env.SpecVersion, env.ActionSpecVersion); err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "note: %v\n", err)
				}
				// The metadata is shown even when the weights are damaged;
				// the exit status then says so.
				_, err = r.Resolve(strconv.FormatUint(m.ID, 10))
				return err
			})
		},
	}

	history := &cobra.Command{
		Use:   "history NAME",
		Short: "Print the promotion history of a model name",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return with(true, true, func(r *models.Registry) error {
				h, err := r.History(args[0])
				if err != nil {
					return err
				}
				if len(h) == 0 {
					fmt.Fprintf(c.OutOrStdout(), "%s has never been promoted\n", args[0])
					return nil
				}
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tAT\tACTION\tPROMOTED\tBEFORE")
				for _, e := range h {
					before := "-"
					if e.Previous != 0 {
						before = fmt.Sprintf("%s@%d", args[0], e.Previous)
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s@%d\t%s\n", e.Seq, e.At.UTC().Format(time.RFC3339), e.Action, args[0], e.Version, before)
				}
				return tw.Flush()
			})
		},
	}

	promote := &cobra.Command{
		Use:   "promote REF",
		Short: "Make a version the promoted one of its name (the previous one is retired)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return with(false, true, func(r *models.Registry) error {
				m, err := r.Promote(args[0], time.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "promoted %s (id %d)%s\n", m.Ref(), m.ID, modelsBefore(r, m.Name))
				return nil
			})
		},
	}

	promote.Flags().BoolVar(&force, "force", false, "promote even a model whose observation/action spec this ecntune does not speak")

	rollback := &cobra.Command{
		Use:   "rollback NAME",
		Short: "Promote again the version promoted before the current one",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return with(false, true, func(r *models.Registry) error {
				m, err := r.Rollback(args[0], time.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "rolled back: %s (id %d) is promoted again%s\n", m.Ref(), m.ID, modelsBefore(r, m.Name))
				return nil
			})
		},
	}

	rollback.Flags().BoolVar(&force, "force", false, "roll back even to a model whose observation/action spec this ecntune does not speak")

	var out string
	export := &cobra.Command{
		Use:   "export REF",
		Short: "Write a model version (metadata, weights, sha256) to --out FILE or stdout",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return with(true, true, func(r *models.Registry) error {
				if out != "" && out != "-" {
					m, err := r.ExportFile(args[0], out)
					if err != nil {
						return err
					}
					fmt.Fprintf(c.ErrOrStderr(), "exported %s (%d bytes of weights, sha256 %s) to %s\n", m.Ref(), m.WeightsSize, m.WeightsSHA256, out)
					return nil
				}
				w := c.OutOrStdout()
				if f, ok := w.(*os.File); ok {
					if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
						return fmt.Errorf("export %s: refusing to write a binary export to a terminal: pass --out FILE or redirect stdout", args[0])
					}
				}
				_, err := r.Export(args[0], w)
				return err
			})
		},
	}
	export.Flags().StringVarP(&out, "out", "o", "", "export file (default stdout); written atomically")

	imp := &cobra.Command{
		Use:   "import FILE",
		Short: "Verify an export file and add its model as a candidate ('-' reads stdin)",
		Long: `import verifies the whole export (magic, format version, sha256 over the file,
sha256 of the weights, metadata) before it writes anything. The model keeps its
version when that version is free in this registry; when the version is taken by
other weights it gets the next free version of its name; when the same weights
are already there under that version nothing is written. Imported models are
candidates with a new id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			// Verify the whole file before the registry is opened (or
			// created): a bad file leaves no trace.
			var m models.Model
			var err error
			if args[0] == "-" {
				if m, err = models.ReadExport(c.InOrStdin()); err != nil {
					return fmt.Errorf("import from stdin: %w", err)
				}
			} else {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("import: %w", err)
				}
				m, err = models.ReadExport(f)
				f.Close()
				if err != nil {
					return fmt.Errorf("import %s: %w", args[0], err)
				}
			}
			if _, err := rl.UnmarshalNet(m.Weights); err != nil {
				return fmt.Errorf("import %s: model %s: the weights match their sha256 but are not an ecntune network: %w", args[0], m.Ref(), err)
			}
			if err := models.CheckSpec(m, env.SpecVersion, env.ActionSpecVersion); err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "note: %v; it is imported but this build will not load or promote it\n", err)
			}
			return with(false, false, func(r *models.Registry) error {
				res, err := r.ImportModel(m)
				if err != nil {
					return err
				}
				m := res.Model
				switch {
				case res.Existing:
					fmt.Fprintf(c.OutOrStdout(), "%s (id %d) is already in %s with the same weights: nothing imported\n", m.Ref(), m.ID, r.Path())
				case res.Renumbered:
					fmt.Fprintf(c.OutOrStdout(), "imported as %s (id %d): version %d of %s is taken here by other weights\n", m.Ref(), m.ID, res.FileVersion, m.Name)
				default:
					fmt.Fprintf(c.OutOrStdout(), "imported %s (id %d) as a candidate\n", m.Ref(), m.ID)
				}
				return nil
			})
		},
	}

	var checkpoint bool
	del := &cobra.Command{
		Use:   "delete REF | --checkpoint RUN",
		Short: "Delete a model version (the promoted one only with --force) or an unfinished run's checkpoint",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return with(false, true, func(r *models.Registry) error {
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
	del.Flags().BoolVar(&force, "force", false, "also delete the promoted version (its name is then left without one)")
	del.Flags().BoolVar(&checkpoint, "checkpoint", false, "delete the checkpoint of training run RUN (its next train starts afresh)")
	del.MarkFlagsMutuallyExclusive("force", "checkpoint")

	cmd.AddCommand(list, show, history, promote, rollback, export, imp, del)
	return cmd
}

// withRegistry opens the registry at path, runs fn on it and closes it,
// keeping the first error.
func withRegistry(path string, opts models.Options, fn func(r *models.Registry) error) (err error) {
	r, err := models.Open(path, opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}()
	return fn(r)
}

// modelsBefore describes the version retired by the last promotion event.
func modelsBefore(r *models.Registry, name string) string {
	h, err := r.History(name)
	if err != nil || len(h) == 0 || h[len(h)-1].Previous == 0 {
		return ""
	}
	return fmt.Sprintf("; %s@%d is retired", name, h[len(h)-1].Previous)
}

// checkpointsTable lists the checkpoints of unfinished training runs
// (only run name's when name is set); nothing when there are none.
func checkpointsTable(w io.Writer, cps []models.Checkpoint, name string) error {
	var rows []models.Checkpoint
	for _, cp := range cps {
		if name == "" || cp.Run == name {
			rows = append(rows, cp)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nunfinished training runs (run the same train command to resume; models delete --checkpoint RUN to drop):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tEPISODES\tSTATE\tSHA256")
	for _, cp := range rows {
		eps := strconv.Itoa(cp.Step)
		if cp.Damaged {
			eps = "damaged"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%x\n", cp.Run, eps, modelsSize(int64(cp.Size)), cp.SHA256[:6])
	}
	return tw.Flush()
}

// deleteCheckpoint removes run's checkpoint, or says there is none.
func deleteCheckpoint(w io.Writer, r *models.Registry, run string) error {
	cps, err := r.Checkpoints()
	if err != nil {
		return err
	}
	for _, cp := range cps {
		if cp.Run == run {
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

// modelsTable prints one line per model version.
func modelsTable(w io.Writer, ms []models.Model) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODEL\tSTATUS\tALGO\tOBS\tACT\tWEIGHTS\tCREATED\tSHA256\tPARENT")
	for _, m := range ms {
		parent := m.Parent
		if parent == "" {
			parent = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			m.ID, m.Ref(), m.Status, m.Algorithm, m.ObsSpec, m.ActSpec, modelsSize(m.WeightsSize),
			m.Created.UTC().Format(time.RFC3339), m.WeightsSHA256[:min(12, len(m.WeightsSHA256))], parent)
	}
	return tw.Flush()
}

func modelsSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
