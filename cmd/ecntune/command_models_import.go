package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/train/rl"
)

func newModelsImportCmd(f *modelsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE",
		Short: "Verify an export file and add its model as a candidate ('-' reads stdin)",
		Long: `import verifies the whole export (magic, format version, sha256 over the file,
sha256 of the weights, metadata) before it writes anything. The model keeps its
version when that version is free in this registry; when the version is taken by
other weights it gets the next free version of its name; when the same weights
are already there under that version nothing is written. Imported models are
candidates with a new id.`,
		Args: oneArg("FILE", "to import (a model written by models export; - for stdin)"),
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
				if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
					return fmt.Errorf("import: %s is a folder: want a file written by ecntune models export", args[0])
				}
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
			if err := policy.CheckModelSpec(m); err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "note: %v; it is imported but this build will not load or promote it\n", err)
			} else if m.ObsSpec != env.SwitchSpecVersion {
				// the network as an agent would run it (its output kind, its
				// inputs, outputs that are numbers): said now, as promote's
				// vet says it, not only at promote
				if _, err := policy.LearnedFromModel(m.Name, m); err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "note: %v; it is imported but no agent could run it, and promote refuses it\n", err)
				}
			}
			return f.with(false, false, false, func(r *models.Registry) error {
				res, err := r.ImportModel(m)
				if err != nil {
					return err
				}
				m := res.Model
				switch {
				case res.Existing:
					fmt.Fprintf(c.OutOrStdout(), "%s (id %d) is already in %s with the same weights: nothing imported\n", m.Ref(), m.ID, r.Path())
				case res.Deleted:
					fmt.Fprintf(c.OutOrStdout(), "imported as %s (id %d): version %d of %s was deleted here, and a version number is never reused\n", m.Ref(), m.ID, res.FileVersion, m.Name)
				case res.Renumbered:
					fmt.Fprintf(c.OutOrStdout(), "imported as %s (id %d): version %d of %s is taken here by other weights\n", m.Ref(), m.ID, res.FileVersion, m.Name)
				default:
					fmt.Fprintf(c.OutOrStdout(), "imported %s (id %d) as a candidate\n", m.Ref(), m.ID)
				}
				return nil
			})
		},
	}
}
