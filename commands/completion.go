package commands

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"vpc-cni/deploy"
)

// zshCompletion runs the bash script under zsh's bashcompinit.
const zshCompletion = `# vpcctl zsh completion: source <(vpcctl completion zsh)
autoload -U +X bashcompinit && bashcompinit
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		UsageText: "source <(vpcctl completion bash)",
		Action: func(c *cli.Context) error {
			switch c.Args().First() {
			case "bash":
				fmt.Fprint(c.App.Writer, deploy.BashCompletion)
			case "zsh":
				fmt.Fprint(c.App.Writer, zshCompletion+deploy.BashCompletion)
			default:
				return usagef("completion: say which shell, bash or zsh")
			}
			return nil
		},
	}
}
