package commands

import "github.com/urfave/cli/v2"

func stub(name, usage string) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, Action: func(*cli.Context) error { return errNotImplemented }}
}

func poolCommand() *cli.Command      { return stub("pool", "show and size the warm pool") }
func reconcileCommand() *cli.Command { return stub("reconcile", "bring the pool to its targets with EC2") }
func gcCommand() *cli.Command        { return stub("gc", "release assignments whose pods are gone") }
func eventsCommand() *cli.Command    { return stub("events", "show recent pool events") }
func simCommand() *cli.Command       { return stub("sim", "run the built-in EC2/IMDS emulator") }
