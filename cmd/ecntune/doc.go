// Command ecntune tunes ECN (Kmin, Kmax, Pmax) and PFC headroom of RoCEv2 fabrics with a learned policy.
// "ecntune help" lists the subcommands, "ecntune help COMMAND" their flags; README.md has examples.
//
// Subcommands:
//
//	demo       a simulated fabric, its gNMI switches and the agent in one process, with a URL to open
//	sim        run the fabric simulator on a scenario (or an ns-3 HPCC config) and summarise it
//	eval       evaluate policies on scenarios in the simulator (mean ± 95% CI over seeds)
//	train      train a learned policy in the simulator and store it in a model registry
//	models     list, show, history, promote, roll back, export, import and delete models
//	simswitch  serve the switches of a simulated fabric over gNMI
//	agent      run the tuning agent against switches over gNMI (shadow mode or closed loop);
//	           agent history and agent rollback read and undo its audit log (rollback
//	           --all: every target); agent pause and resume stop and restart its writes
//	bench      measure speed and memory: bench sim, bench policy, bench agent
//
// Policies are named by the specs policy.Lookup takes (static:NAME,
// fixed:KMIN/KMAX/PMAX, schedule:..., adaptive, builtin[:prefer=P],
// builtin:400g, model:NAME[:prefer=P], roles:host=SPEC;fabric=SPEC[;other=SPEC],
// rate:SPEC;RATE=SPEC[;...]). The model registry is the file --db names, else
// $ECNTUNE_DB, else ecntune.db in the current directory. Errors go to
// stderr prefixed "ecntune:" and exit with status 1.
package main
