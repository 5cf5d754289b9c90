package commands

import "github.com/urfave/cli/v2"

func stub(name, usage string) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, Action: func(*cli.Context) error { return errNotImplemented }}
}

func gcCommand() *cli.Command { return stub("gc", "release assignments whose pods are gone") }
