package events

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Buffer is a record.EventRecorder that keeps the events a reconcile
// makes until its status write has landed (Flush), so that a write that
// fails — a conflict with a newer version, say — leaves no event behind for
// a transition that was not recorded, and the retry tells the story once.
// It is not safe for concurrent use; one reconcile owns it.
type Buffer struct {
	events []bufferedEvent
}

type bufferedEvent struct {
	obj                        runtime.Object
	annotations                map[string]string
	eventType, reason, message string
}

// Event implements record.EventRecorder.
func (b *Buffer) Event(obj runtime.Object, eventType, reason, message string) {
	b.events = append(b.events, bufferedEvent{obj: obj, eventType: eventType, reason: reason, message: message})
}

// Eventf implements record.EventRecorder.
func (b *Buffer) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	b.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// AnnotatedEventf implements record.EventRecorder.
func (b *Buffer) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventType, reason, format string, args ...any) {
	b.events = append(b.events, bufferedEvent{obj: obj, annotations: annotations, eventType: eventType, reason: reason, message: fmt.Sprintf(format, args...)})
}

// Len returns how many events wait.
func (b *Buffer) Len() int { return len(b.events) }

// Each calls f with each buffered event, in order.
func (b *Buffer) Each(f func(eventType, reason, message string)) {
	for _, e := range b.events {
		f(e.eventType, e.reason, e.message)
	}
}

// MaxMessageBytes bounds a coalesced event's message (events.k8s.io's
// note limit): a run of transitions longer than this is sent as several
// events.
const MaxMessageBytes = 1024

// Flush sends the buffered events to to, in order, and empties the buffer.
// Each run of consecutive Normal events on one object (without annotations)
// is sent as one event: its reason is the run's last (PhaseWaiting when the
// reconcile stopped at a wait, EndedAction when the action ended), its
// message the run's messages in order, joined by "; ". A reconcile that
// validates, creates a Velero Backup and starts waiting thus writes one
// event, not four, and kubectl describe still names every phase, its
// function and how long it took. Warnings are always events of their own.
func (b *Buffer) Flush(to record.EventRecorder) {
	var run []bufferedEvent
	send := func() {
		if len(run) == 0 {
			return
		}
		last := run[len(run)-1]
		msg := last.message
		if len(run) > 1 {
			msgs := make([]string, len(run))
			for i, e := range run {
				msgs[i] = e.message
			}
			msg = strings.Join(msgs, "; ")
		}
		to.Event(last.obj, last.eventType, last.reason, msg)
		run = run[:0]
	}
	for _, e := range b.events {
		joinable := e.eventType == corev1.EventTypeNormal && e.annotations == nil
		if len(run) > 0 && (!joinable || run[0].obj != e.obj || runBytes(run)+2+len(e.message) > MaxMessageBytes) {
			send()
		}
		switch {
		case joinable:
			run = append(run, e)
		case e.annotations != nil:
			to.AnnotatedEventf(e.obj, e.annotations, e.eventType, e.reason, "%s", e.message)
		default:
			to.Event(e.obj, e.eventType, e.reason, e.message)
		}
	}
	send()
	b.events = nil
}

// runBytes is the length of run's messages joined by "; ".
func runBytes(run []bufferedEvent) int {
	n := 0
	for i, e := range run {
		if i > 0 {
			n += 2
		}
		n += len(e.message)
	}
	return n
}
