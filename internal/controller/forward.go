package controller

import (
	"fmt"
	"strings"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// unknownAttributesMessage is the PreCheckFailed message of a desire whose `spec` holds
// attributes this applier does not know (api's CommonSpec.UnknownAttributes): it names them
// and what the kind's spec may hold, so a backend sees that a newer applier is needed
// (docs/contract.md "Forward safety").
func unknownAttributesMessage(kind api.DesireKind, unknown []string) string {
	quoted := make([]string, len(unknown))
	for i, name := range unknown {
		quoted[i] = fmt.Sprintf("%q", name)
	}
	subject, pronoun := "spec attribute "+quoted[0]+" is", "it"
	if len(quoted) > 1 {
		subject, pronoun = "spec attributes "+strings.Join(quoted, ", ")+" are", "them"
	}
	return fmt.Sprintf("%s not known to this applier (the %s spec may hold only %s): a newer applier may understand %s; "+
		"refusing rather than acting with a default", subject, kind, strings.Join(api.KnownSpecAttributes(kind), ", "), pronoun)
}
