package commands

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

const bashCompletion = `# vpcctl bash completion: source <(vpcctl completion bash)
_vpcctl_complete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == "-"* ]]; then
    opts=$( "${COMP_WORDS[@]:0:$COMP_CWORD}" "${cur}" --generate-bash-completion 2>/dev/null )
  else
    opts=$( "${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null )
  fi
  COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
  return 0
}
complete -o bashdefault -o default -F _vpcctl_complete vpcctl
`

const zshCompletion = `# vpcctl zsh completion: source <(vpcctl completion zsh)
autoload -U +X bashcompinit && bashcompinit
` + bashCompletion

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		UsageText: "source <(vpcctl completion bash)",
		Action: func(c *cli.Context) error {
			switch c.Args().First() {
			case "bash":
				fmt.Fprint(c.App.Writer, bashCompletion)
			case "zsh":
				fmt.Fprint(c.App.Writer, zshCompletion)
			default:
				return usagef("completion: say which shell, bash or zsh")
			}
			return nil
		},
	}
}
