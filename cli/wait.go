package cli

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Progress is one look at an operation --wait follows, taken from the NAC
// object's status.
type Progress struct {
	// Phase is the phase that runs, waits or last ended, Func its function
	// and State its state; Message what it says.
	Phase, Func, State, Message string
	// Index is the 1-based position of Phase in the plan, of Phases.
	Index, Phases int
	// Done and Total count Velero's items (backed up or restored); Total 0
	// when Velero has not counted yet.
	Done, Total int
	// Volumes is the volume progress ("2 of 3 volumes uploaded …"), if any.
	Volumes string
	// Queue is the estimated queue position, 0 when not queued.
	Queue int
	// Ended is true once the plan ended (complete or failed); Failure then
	// says why the operation did not succeed ("" on success).
	Ended   bool
	Failure string
	// Summary is the closing line of a successful operation.
	Summary string
}

// progressOf reads the Progress of a plan (nil before the controller
// started one) for the action the follower waits for.
func planProgress(p *v1alpha1.PlanStatus, action string) Progress {
	var pr Progress
	if p == nil || (action != "" && p.Action != action) {
		pr.State = "pending"
		pr.Message = "waiting for the controller to start the plan"
		return pr
	}
	pr.Phases = len(p.Phases)
	current := -1
	for i, ph := range p.Phases {
		if ph.State != v1alpha1.PhasePending && ph.State != v1alpha1.PhaseSkipped {
			current = i
		}
	}
	if current < 0 && p.IsSummary() {
		pr.State = string(p.State) // every phase completed (engine.Compact)
	}
	if current >= 0 {
		ph := p.Phases[current]
		pr.Phase, pr.Func, pr.State, pr.Message, pr.Index = ph.Name, ph.Func, string(ph.State), ph.Message, current+1
	}
	if d := p.DeferPhase; d != nil && (d.State == v1alpha1.PhaseRunning || d.State == v1alpha1.PhaseWaiting) {
		pr.Phase, pr.Func, pr.State, pr.Message = d.Name+" (defer)", d.Func, string(d.State), d.Message
	}
	switch p.State {
	case v1alpha1.PlanComplete:
		pr.Ended = true
	case v1alpha1.PlanFailed:
		pr.Ended = true
		pr.Failure = failedPhase(p)
	}
	return pr
}

// failedPhase names the phase that failed a plan and its message.
func failedPhase(p *v1alpha1.PlanStatus) string {
	for _, ph := range p.Phases {
		if ph.State == v1alpha1.PhaseFailed {
			return fmt.Sprintf("phase %s (%s) failed: %s", ph.Name, ph.Func, ph.Message)
		}
	}
	if d := p.DeferPhase; d != nil && d.State == v1alpha1.PhaseFailed {
		return fmt.Sprintf("deferPhase %s (%s) failed: %s", d.Name, d.Func, d.Message)
	}
	return "the plan failed: " + or(p.Message, p.Current)
}

// BackupProgress is the Progress of nab's backup: it succeeds when the plan
// completed and Velero's Backup is Completed.
func BackupProgress(nab *v1alpha1.NonAdminBackup) Progress {
	return backupOperation(nab).progress()
}

// RestoreProgress is the Progress of nar's restore: it succeeds when the
// plan completed and Velero's Restore is Completed.
func RestoreProgress(nar *v1alpha1.NonAdminRestore) Progress {
	return restoreOperation(nar).progress()
}

// follow shows obj's Progress (a bar on a terminal, a line per change
// otherwise) until the plan ends: it watches obj, so that every status
// write is seen, and re-reads it every PollInterval when the watch is not
// available or ends. list is an empty list of obj's kind (for the watch).
// It returns nil on success and *OperationFailed otherwise; ctx ends it
// early with ctx's error.
func (o *Options) follow(ctx context.Context, c client.Client, obj client.Object, list client.ObjectList, kind string, progress func() Progress) error {
	start := o.now()
	r := &progressRenderer{w: o.Out, terminal: o.Terminal, width: o.Width}
	defer r.end()
	var events <-chan watch.Event
	if wc, ok := c.(client.WithWatch); ok {
		w, err := wc.Watch(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{"metadata.name": obj.GetName()})
		if err == nil {
			defer w.Stop()
			events = w.ResultChan()
		}
	}
	tick := time.NewTicker(o.PollInterval)
	defer tick.Stop()
	fresh := true // obj must be read before it is shown
	for {
		if fresh {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if apierrors.IsNotFound(err) {
				return &OperationFailed{Kind: kind, Name: obj.GetName(), Message: "it was deleted while waiting"}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return err
			}
		}
		pr := progress()
		r.show(pr, o.now().Sub(start))
		if pr.Ended {
			r.end()
			if pr.Failure != "" {
				return &OperationFailed{Kind: kind, Name: obj.GetName(), Message: pr.Failure}
			}
			fmt.Fprintf(o.Out, "%s %s completed in %s. %s\n", kind, obj.GetName(), durationString(o.now().Sub(start)), pr.Summary)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			fresh = false
			switch {
			case !ok:
				events, fresh = nil, true // the watch ended: poll
			case ev.Type == watch.Deleted:
				return &OperationFailed{Kind: kind, Name: obj.GetName(), Message: "it was deleted while waiting"}
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				if !copyInto(obj, ev.Object) {
					fresh = true
				}
			default:
				fresh = true
			}
		case <-tick.C:
			// With a watch, only the elapsed time moves (a bar on a
			// terminal); without one, re-read.
			fresh = events == nil
		}
	}
}

// copyInto copies the object of a watch event into obj when they are of
// the same type.
func copyInto(obj client.Object, from runtime.Object) bool {
	dst, src := reflect.ValueOf(obj), reflect.ValueOf(from)
	if dst.Type() != src.Type() || dst.Kind() != reflect.Pointer {
		return false
	}
	dst.Elem().Set(src.Elem())
	return true
}

// progressRenderer draws Progress: on a terminal one line redrawn in place
// (bar, phase, items, elapsed); otherwise a plain line whenever what it says
// changes (logs and CI stay readable).
type progressRenderer struct {
	w        io.Writer
	terminal bool
	// width is the terminal's width in columns (0: unknown); the redrawn
	// line is cut to it, since a wrapped line cannot be redrawn in place.
	width int
	last  string
	drawn bool
}

func (r *progressRenderer) show(pr Progress, elapsed time.Duration) {
	text := ProgressLine(pr)
	if r.terminal {
		line := []rune(fmt.Sprintf("%s %s %s", ProgressBar(pr, 24), durationString(elapsed), text))
		if r.width > 1 && len(line) > r.width-1 {
			line = append(line[:r.width-2], '…')
		}
		fmt.Fprintf(r.w, "\r\033[K%s", string(line))
		r.drawn = true
		return
	}
	if text == r.last {
		return
	}
	r.last = text
	fmt.Fprintf(r.w, "%6s  %s\n", durationString(elapsed), text)
}

func (r *progressRenderer) end() {
	if r.terminal && r.drawn {
		fmt.Fprintln(r.w)
		r.drawn = false
	}
}

// ProgressLine says where the operation is: "[3/5] waitForBackup (WaitFor)
// waiting · 12 of 40 items · queue position 2 · <message>".
func ProgressLine(pr Progress) string {
	var parts []string
	head := pr.State
	if pr.Phase != "" {
		head = fmt.Sprintf("%s (%s) %s", pr.Phase, pr.Func, pr.State)
		if pr.Index > 0 {
			head = fmt.Sprintf("[%d/%d] %s", pr.Index, pr.Phases, head)
		}
	}
	parts = append(parts, head)
	if pr.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d items", pr.Done, pr.Total))
	}
	if pr.Volumes != "" {
		parts = append(parts, pr.Volumes)
	}
	if pr.Queue > 0 {
		parts = append(parts, fmt.Sprintf("queue position %d", pr.Queue))
	}
	if pr.Message != "" {
		parts = append(parts, oneLine(pr.Message))
	}
	return strings.Join(parts, " · ")
}

// ProgressBar draws width cells: items done of total once Velero counted
// them, else phases reached of the plan's phases.
func ProgressBar(pr Progress, width int) string {
	done, total := pr.Done, pr.Total
	if total == 0 {
		done, total = pr.Index, pr.Phases
		if done > 0 && !pr.Ended {
			done-- // the current phase has not ended
		}
	}
	if pr.Ended && pr.Failure == "" {
		done, total = 1, 1
	}
	filled := 0
	if total > 0 {
		filled = done * width / total
	}
	if filled > width {
		filled = width
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", width-filled) + "]"
}
