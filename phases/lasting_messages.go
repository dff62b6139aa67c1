package phases

import "strings"

// The completion messages a compacted plan keeps (engine.MessageKeeper).
// When a plan ends, engine.Compact drops the message of every phase that
// simply completed: the object's conditions, its Velero references and
// usage, and its events while they live tell what the phase did. A message
// stays when it is the only record of something a reader of the object
// needs later: what the admin enforced on the spec, an object adopted
// rather than created, what a restore left out and why, why something was
// not checked or measured, a note an admin's blueprint wrote. The rules
// are here, together, so that what an ended operation still tells is
// decided in one place (docs/performance.md, "History at scale").

// Parts of messages the rules below look for.
const (
	// enforcedNote starts the part of a validation's message that names
	// the fields the admin enforced (enforcedBy).
	enforcedNote = "; enforced by the admin"
	// pvExcludedNote starts the part of CreateVeleroRestore's message that
	// says why PersistentVolumes were kept out of the restore
	// (scopeRestore).
	pvExcludedNote = "; PersistentVolumes excluded"
)

// adopted reports whether message, a created-or-adopted phase's
// completion message ("<verb> <kind> ...", createOrAdopt), says the object
// was adopted: a controller stopped between creating it and recording it.
func adopted(message string) bool { return strings.HasPrefix(message, "Adopted ") }

// KeepsMessage implements engine.MessageKeeper: the fields the admin
// enforced.
func (f *ValidateBackupSpec) KeepsMessage(m string) bool { return strings.Contains(m, enforcedNote) }

// KeepsMessage implements engine.MessageKeeper: the fields the admin
// enforced.
func (f *ValidateRestoreSpec) KeepsMessage(m string) bool { return strings.Contains(m, enforcedNote) }

// KeepsMessage implements engine.MessageKeeper: the fields the admin
// enforced.
func (f *ValidateBSLSpec) KeepsMessage(m string) bool { return strings.Contains(m, enforcedNote) }

// KeepsMessage implements engine.MessageKeeper: an adoption; "Created" is
// what status.veleroBackup says.
func (f *CreateVeleroBackup) KeepsMessage(m string) bool { return adopted(m) }

// KeepsMessage implements engine.MessageKeeper: an adoption, and why
// PersistentVolumes were left out of the restore.
func (f *CreateVeleroRestore) KeepsMessage(m string) bool {
	return adopted(m) || strings.Contains(m, pvExcludedNote)
}

// KeepsMessage implements engine.MessageKeeper: an adoption, and a forged
// status.veleroBackup.name that was corrected.
func (f *CreateDeleteBackupRequest) KeepsMessage(m string) bool {
	return adopted(m) || strings.Contains(m, "corrected:")
}

// KeepsMessage implements engine.MessageKeeper: a backup adopted from
// Velero, not created by nacflow.
func (f *AdoptVeleroBackup) KeepsMessage(string) bool { return true }

// KeepsMessage implements engine.MessageKeeper: why a restore's items were
// not checked.
func (f *CheckRestoreItems) KeepsMessage(m string) bool { return strings.HasPrefix(m, "not checked") }

// KeepsMessage implements engine.MessageKeeper: why a backup's usage was
// not measured (status.usage is then absent).
func (f *MeasureUsage) KeepsMessage(m string) bool { return strings.HasPrefix(m, "not measured") }

// KeepsMessage implements engine.MessageKeeper: a preview's result is its
// message.
func (f *PreviewRestore) KeepsMessage(string) bool { return true }

// KeepsMessage implements engine.MessageKeeper: Velero could not delete a
// backup and the deletion went on.
func (f *WaitFor) KeepsMessage(m string) bool { return strings.Contains(m, "could not delete") }

// KeepsMessage implements engine.MessageKeeper: the admin's blueprint
// wrote the message.
func (f *Notify) KeepsMessage(string) bool { return true }

// KeepsMessage implements engine.MessageKeeper: the admin's blueprint
// wrote the message.
func (f *MarkDeleting) KeepsMessage(string) bool { return true }
