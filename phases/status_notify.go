package phases

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nacflow/nacflow/engine"
)

// NotifyArgs are the args of Notify.
type NotifyArgs struct {
	// Type of the event: Normal (default) or Warning.
	Type string `json:"type,omitempty" doc:"Normal (default) or Warning"`
	// Reason, CamelCase (e.g. RetentionPolicy).
	Reason string `json:"reason" doc:"CamelCase event reason"`
	// Message, usually templated (e.g. "backups of {{ .Namespace }} are kept 30 days").
	Message string `json:"message" doc:"event message, usually templated"`
}

// Validate implements engine.ArgsValidator: type Normal or Warning, a
// CamelCase reason without spaces, a message.
func (a NotifyArgs) Validate() error {
	switch {
	case a.Type != "" && a.Type != corev1.EventTypeNormal && a.Type != corev1.EventTypeWarning:
		return fmt.Errorf("type: %q is not Normal or Warning", a.Type)
	case a.Reason == "" || !isCamelCase(a.Reason):
		return fmt.Errorf("reason: %q is not a CamelCase word", a.Reason)
	case a.Message == "":
		return fmt.Errorf("message is empty")
	}
	return nil
}

func isCamelCase(s string) bool {
	if s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Notify emits an event with the admin's reason and message on the NAC
// object, so tenants read the admin's word in kubectl describe (a policy, a
// maintenance window). It writes nothing else. Output: reason.
type Notify struct {
	tools tools
}

// Run implements phaseFunc.
func (f *Notify) Run(_ context.Context, op *engine.Operation, _ engine.Object, a *NotifyArgs) (engine.Result, error) {
	t := a.Type
	if t == "" {
		t = corev1.EventTypeNormal
	}
	if f.tools.recorder != nil {
		f.tools.recorder.Event(op.Object, t, a.Reason, a.Message)
	}
	return engine.Done(a.Message, map[string]string{"reason": a.Reason}), nil
}

// Doc implements engine.Documented.
func (*Notify) Doc() engine.FuncDoc {
	return engine.FuncDoc{Summary: "Emits an event with the admin's type, reason and message on the NAC object (kubectl describe shows it).", Outputs: []string{"reason"}}
}
