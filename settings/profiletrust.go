package settings

import (
	"fmt"
	"slices"
	"strings"

	"vpc-cni/pool"
)

// Which pods may pick a profile. **contract**: PROFILE_<NAME>_NAMESPACES
// binds a profile to namespaces on the node; the ADD refuses a pod of any
// other namespace. ProfileAdmission says a cluster admission policy decides
// instead (the chart sets it when it renders its policy), so that doctor and
// pool status do not call a profile open to any pod.
const (
	ProfileNamespaces = "NAMESPACES"
	ProfileAdmission  = "VPC_CNI_PROFILE_ADMISSION"
)

// maxNamespace bounds a Kubernetes namespace name (a DNS-1123 label).
const maxNamespace = 63

// parseNamespace accepts a DNS-1123 label, as Kubernetes names namespaces.
func parseNamespace(s string) (string, error) {
	ok := len(s) <= maxNamespace && onlyOf(s, 'a', 'z', '-') && s[0] != '-' && s[len(s)-1] != '-'
	if !ok {
		return "", fmt.Errorf("%q is no namespace name: a DNS-1123 label (lower-case letters, digits and '-', "+
			"starting and ending with a letter or digit, at most %d characters)", s, maxNamespace)
	}
	return s, nil
}

// Admits reports whether a pod of namespace may pick the profile: it is
// bound to no namespace, or to that one.
func (p Profile) Admits(namespace string) bool {
	return len(p.Namespaces) == 0 || slices.Contains(p.Namespaces, namespace)
}

// OpenProfiles lists the profiles the node serves that any pod may pick:
// bound to no namespace on the node, with no admission policy declared.
func (e Effective) OpenProfiles() []pool.Pool {
	if e.ProfileAdmission {
		return nil
	}
	var out []pool.Pool
	for _, p := range e.Profiles {
		if p.Allowed && len(p.Namespaces) == 0 {
			out = append(out, p.Name)
		}
	}
	return out
}

// OpenProfilesWarning says what OpenProfiles means for the operator ("" when
// names is empty).
func OpenProfilesWarning(names []string) string {
	if len(names) == 0 {
		return ""
	}
	what := "the network profile "
	if len(names) > 1 {
		what = "the network profiles "
	}
	return fmt.Sprintf("any pod may pick %s%s (annotation %s): bind each to namespaces with %s, "+
		"or apply the admission policy and set %s=true", what, strings.Join(names, ", "), ProfileAnnotation,
		ProfileKey("<name>", ProfileNamespaces), ProfileAdmission)
}

// profileTrust resolves a profile's namespaces into p.
func (r *resolver) profileTrust(p *Profile) error {
	var err error
	p.Namespaces, err = r.profileList(string(p.Name), ProfileNamespaces, parseNamespace)
	return err
}
