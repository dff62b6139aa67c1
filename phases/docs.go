package phases

import "github.com/nacflow/nacflow/engine"

// The reference of every phase function (engine.Documented): `nac funcs`
// prints it and docs/functions.md is generated from it.

const apiRetried = "API errors are retried with backoff up to the phase's retries; "

// Doc implements engine.Documented.
func (*ValidateBackupSpec) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminBackup's backupSpec against the tenant rules (own namespace only, nothing cluster-scoped, storageLocation only an approved Available NonAdminBackupStorageLocation of the namespace) and applies args.enforce; sets Accepted and status.veleroBackup.spec (the effective spec).",
		Errors:  "a refusal is terminal (Accepted=False/InvalidBackupSpec, phase BackingOff); " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*CreateVeleroBackup) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates (or adopts) the Velero Backup <ns>-<name>-<nacuuid> in the OADP namespace from the accepted spec, includedNamespaces forced to the tenant's, NAC kinds excluded, OADP labels plus args.labels/annotations; phase Created, Queued=True.",
		Outputs: []string{"name: the Velero Backup", "namespace: the OADP namespace"},
		Errors:  "a name held by another operation's object is terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*WaitFor) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Waits until an object is ready (Velero's wait-for-ready design): a Backup or Restore finished, a BackupStorageLocation Available, a DeleteBackupRequest's Backup gone, a NonAdminBackup's backup restorable. The phase's timeout and onTimeout apply.",
		Outputs: []string{"phase: the object's final phase (Backup, Restore, BackupStorageLocation)", "name: the Velero Backup (RestorableBackup)"},
		Errors:  "an object deleted before it finished, a Failed backup to restore, Velero's deletion errors, an object that is not the operation's own (or, for RestorableBackup, not of the tenant's namespace) are terminal; " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*SyncStatus) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Mirrors a Velero object's spec and status into the NAC object's status (veleroBackup, veleroRestore, veleroBackupStorageLocation, veleroDeleteBackupRequest) and the queue position. A missing object is not an error.",
		Outputs: []string{"phase: the Velero object's phase"},
		Errors:  apiRetried + "an unknown kind and an object that is not the operation's own are terminal",
	}
}

// Doc implements engine.Documented.
func (*MarkDeleting) Doc() engine.FuncDoc {
	return engine.FuncDoc{Summary: "Sets status.phase Deleting and condition Deleting=True/DeletionPending with args.message.", Errors: "an empty message is terminal"}
}

// Doc implements engine.Documented.
func (*CreateDeleteBackupRequest) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Asks Velero to delete the NonAdminBackup's backup and its data: one DeleteBackupRequest named like the backup, with Velero's backup-name/backup-uid labels; nothing when there is no Velero Backup. The backup is the one carrying this operation's NACUUID and made for this NAB, never one named by status alone (a status.veleroBackup.name that disagrees is corrected, and the message says so).",
		Outputs: []string{`name: the DeleteBackupRequest ("" when there was nothing to delete)`},
		Errors:  "a name held by another operation's object is terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*DeleteObjects) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Deletes the objects of args.kinds that this operation created: only in the OADP namespace, only with its NACUUID label and not made for another namespace (origin-namespace annotation). Deleting a Velero Backup object keeps its data.",
		Errors:  "an unknown kind is terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*ValidateRestoreSpec) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminRestore's restoreSpec: backupName names a NonAdminBackup of the same namespace (not refused, not deleting, not Failed); scheduleName, namespaceMapping, excludedNamespaces and other namespaces are refused; applies args.enforce; sets Accepted and status.veleroRestore.spec.",
		Outputs: []string{"nonAdminBackup: the NonAdminBackup named"},
		Errors:  "a refusal is terminal (Accepted=False/InvalidRestoreSpec, phase BackingOff); " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*CreateVeleroRestore) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates (or adopts) the Velero Restore in the OADP namespace from the accepted spec: backupName = args.backupName (which must belong to the tenant's namespace), includedNamespaces = the tenant's, NAC kinds and volumesnapshotclasses excluded (and persistentvolumes, for a backup kept in a bucket the tenant writes: its volumes come back only from data in the bucket, never from a snapshot ID it names), OADP nar labels plus args.labels/annotations.",
		Outputs: []string{"name: the Velero Restore"},
		Errors:  "a backup of another namespace, a name held by another operation's object are terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*DeleteRestoresOfBackup) Doc() engine.FuncDoc {
	return engine.FuncDoc{Summary: "Deletes the NonAdminRestores of the NonAdminBackup's namespace whose backupName names it.", Outputs: []string{"deleted: how many"}, Errors: apiRetried}
}

// Doc implements engine.Documented.
func (*ValidateBSLSpec) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminBackupStorageLocation (default false; provider, bucket, credential name and key required; the Secret exists in the namespace), applies args.enforce, forces the prefix under the namespace; checks what Velero will interpret: config keys by the provider plugin's allow-list, URL-valued keys (s3Url, publicUrl, ...) resolved against the endpoint rules (nac --endpoint-* flags plus args.endpoints), and the credential file as static key material only, as the provider's SDK parses it (aws, gcp, azure; others only with nac --unchecked-credential-providers); sets Accepted and status.veleroBackupStorageLocation.spec.",
		Outputs: []string{"prefix: the effective prefix in object storage"},
		Errors:  "a refusal is terminal (Accepted=False naming the field or key and why, phase BackingOff; the Velero BSL and copied Secret of an earlier run are removed); a DNS failure that may pass is retried; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*RequestApproval) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "The admin approval gate: creates the NonAdminBackupStorageLocationRequest (approved at once without --require-approval-for-bsl), then goes on when approved, waits while pending, fails when rejected; pending or reject also remove the Velero BSL and copied Secret of an earlier approval.",
		Outputs: []string{"request: the request's name"},
		Errors:  "reject is terminal; " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*CopySecret) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Copies the location's credential Secret (its type and the credential's key only) into the OADP namespace, named like its other objects, after checking the bytes copied as ValidateBSLSpec does (static key material only); updates the copy when the tenant's Secret changed.",
		Outputs: []string{"name: the copy"},
		Errors:  "a missing Secret or key, or a credential that is not static key material, is terminal (the Velero BSL and copy of an earlier run are removed); " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*CreateVeleroBSL) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates or updates the Velero BackupStorageLocation from the effective spec, credential pointing at args.secretName (which must be the operation's own copy: the safety rule refuses any other Secret), default false; phase Created.",
		Outputs: []string{"name: the Velero BSL"},
		Errors:  "a name held by another operation's object, a Secret that is not the operation's own copy are terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*DeleteBackupsUsingBSL) Doc() engine.FuncDoc {
	return engine.FuncDoc{Summary: "Deletes the NonAdminBackups of the location's namespace whose storageLocation names it.", Outputs: []string{"deleted: how many"}, Errors: apiRetried}
}

// Doc implements engine.Documented.
func (*AdoptVeleroBackup) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Links a NonAdminBackup made by backup sync to the existing Velero Backup with NACUUID args.nacuuid, creating nothing; refuses a backup not made for this very NAB (origin namespace and name annotations).",
		Outputs: []string{"name: the Velero Backup"},
		Errors:  "no such backup, or another namespace's or NAB's backup, is terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*Notify) Doc() engine.FuncDoc {
	return engine.FuncDoc{Summary: "Emits an event with the admin's type, reason and message on the NAC object (kubectl describe shows it).", Outputs: []string{"reason"}}
}

// Doc implements engine.Documented.
func (*WaitForTurn) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "The fair share of Velero's queues: a NonAdminBackup (NonAdminRestore) waits (not refused) until its namespace has fewer than args.max unfinished Velero Backups, its schedules' runs included (Velero Restores), and its turn has come: the namespace's waiting operations in creation order, namespaces with room round-robin (fewest in Velero first). The message and condition Queued=False/WaitingForTurn give its place among its namespace's waiting operations.",
		Outputs: []string{"limit: the namespace's limit (0: unlimited)", "position, waiting, why (while waiting): its place among the namespace's waiting operations, how many wait, and full (the namespace is at its limit) or turn (another namespace goes first)"},
		Errors:  "a kind other than NonAdminBackup or NonAdminRestore is terminal; " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*LimitActiveOperations) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "A per-tenant concurrency limit: refuses the operation when its namespace already has args.max other NonAdminBackups (or NonAdminRestores) whose plan is pending or running.",
		Outputs: []string{"active: how many others were active"},
		Errors:  "over the limit is terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*ValidateDownloadRequest) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminDownloadRequest: spec.target.kind one of Velero's DownloadTarget kinds, spec.target.name a NonAdminBackup (Backup*/CSI* kinds) or NonAdminRestore (Restore* kinds) of the same namespace whose Velero object was made for it; waits while that object runs; with args.requireTenantLocation refuses backups on the admin's location (OADP NAC's rule). Sets Accepted.",
		Outputs: []string{"kind: the Velero DownloadTarget kind", "name: the Velero Backup or Restore"},
		Errors:  "a refusal is terminal (Accepted=False/InvalidDownloadRequest, phase BackingOff); " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*CreateDownloadRequest) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates (or adopts) the Velero DownloadRequest <ns>-<name>-<nacuuid> in the OADP namespace for file args.kind of the Velero Backup or Restore args.name (which must be of the tenant's namespace); status.velero links it, phase Created.",
		Outputs: []string{"name: the Velero DownloadRequest"},
		Errors:  "an unknown kind, an empty name, a target of another namespace and a name held by another operation's object are terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*VerifyBackupContents) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "After a Completed or PartiallyFailed backup, fetches its resource list through a Velero DownloadRequest and checks every item is the tenant's: in its namespace, or that Namespace, a PersistentVolume of its claims, a CRD of its custom resources. Sets Verified (True with the count; False naming the items, with a Warning event; Unknown when the list could not be read).",
		Outputs: []string{"items: items checked", "unexpected: items that are not the tenant's"},
		Errors:  "unexpected items with args.failOnUnexpectedItems are terminal; " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*ValidateScheduleSpec) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminSchedule: spec.schedule parses as Velero parses it; the template's backupSpec passes every rule of a NonAdminBackup (own namespace, nothing cluster-scoped, a storageLocation of the namespace, waited for while not ready) with the admin's enforced values applied, and sets no metadata; the admin's bounds hold (args.minInterval between runs, args.maxTTL, args.allowedHours, args.maxRPO, each checked on the next 1000 runs where it applies). Records the accepted schedule in status.veleroSchedule.spec and the objective in force in status.rpo; sets Accepted.",
		Outputs: []string{"nextRun: the first run after the plan started (RFC 3339)"},
		Errors:  "a refusal is terminal (Accepted=False/InvalidScheduleSpec, phase BackingOff), its message naming the field and the limit; " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*CreateVeleroSchedule) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates the Velero Schedule <ns>-<name>-<nacuuid> in the OADP namespace from status.veleroSchedule.spec (includedNamespaces the tenant's, NAC kinds and OADP's cluster-scoped list excluded, no template metadata, useOwnerReferencesInBackup false), or updates the schedule's own one in place; labels and origin annotations (with the tenant's storage location) that Velero copies onto every run. skipImmediately true is passed on. Under the fair share of Velero's queue (--max-backups-in-velero-per-namespace) it is created paused (openshift.io/oadp-nacflow-paused-by-share) and an update keeps the pause SyncScheduleRuns set.",
		Outputs: []string{"name: the Velero Schedule", "namespace: the OADP namespace"},
		Errors:  "no accepted spec, and a name held by another operation's object, are terminal; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*SyncScheduleRuns) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Follows a NonAdminSchedule's Velero Schedule: mirrors its status; claims every Backup it took for a NonAdminBackup of its own (NAB origin label and annotations; a Backup naming another namespace is never taken) and creates that NAB in the schedule's namespace, linked in status and adopted; lists the newest runs in status.recentBackups; sets status.nextRun (Velero's rule) and condition RPOMet from status.rpo, with an RPOMissed or RPOMet event when it changes; prunes runs spec.retention (or args.defaultRetention, bounded by args.maxKeep) does not keep (spec.deleteBackup, PrunedBackup events, status.retention); pauses the Velero Schedule while its next run would pass the namespace's quota (CheckQuota's args in the namespace's NonAdminBackup blueprint; condition WithinQuota, QuotaExceeded and ScheduleResumed events) and resumes it when there is room; under the fair share of Velero's queue (--max-backups-in-velero-per-namespace) keeps the Velero Schedule paused between runs and resumes it for a due run only once that run has its turn (condition WithinShare, a RunWaitsForTurn event while it waits). Runs come after the plan has ended: the controller runs this phase again on every look at the schedule.",
		Outputs: []string{"runs: how many runs the schedule has"},
		Errors:  "a run the safety rule refuses to claim is left alone; " + apiRetried,
	}
}

// Doc implements engine.Documented.
func (*CheckRestoreItems) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Before a NonAdminRestore's Velero Restore: checks that Velero runs nacflow's plugin nacflow.io/restore-as-tenant (a ServerStatusRequest; refused without it), then streams the backup's contents (a DownloadRequest BackupContents; at most 256 MiB, items of 1 MiB, 100,000 items) and judges every item Velero would restore against the tenant role (--tenant-role): create rights, Kubernetes' escalation rule for Roles and RoleBindings, PersistentVolume sources. Sets RestoreItemsChecked (True with the count; False naming the items left out, with a Warning event ItemsExcluded; Unknown when the contents could not be read). The plugin enforces the same rules on what Velero really restores. Does nothing with --restore-precheck=false.",
		Outputs: []string{"items: items checked", "excluded: items the tenant could not create"},
		Errors:  "Velero without the plugin, and with args.onExcluded refuse an excluded item or unread contents, are terminal (Accepted=False); " + apiRetried,
		Waits:   true,
	}
}

// Doc implements phaseFunc.
func (*PreviewRestore) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "For a NonAdminRestore with spec.preview: streams the backup's contents (a DownloadRequest BackupContents; at most 256 MiB, items of 1 MiB) and tells, for every item Velero would restore into the namespace, what the restore would do: create (absent), skip (exists; existingResourcePolicy none, or identical), update (exists and differs, with existingResourcePolicy update: the changed fields named), excluded (the restore's filters, nacflow's exclusions or the tenant role: the rule named) or unknown (the live object could not be read). Live objects are read in the NonAdminRestore's namespace only. Writes status.preview (counts and the first 100 items); makes no Velero Restore.",
		Outputs: []string{"total: items previewed", "create, skip, update, excluded: items by outcome"},
		Errors:  "contents Velero did not serve in time or that could not be read are terminal (the preview fails saying why); " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*TestRestore) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "An admin's opt-in (args.every > 0): for one Completed backup in every args.every of the namespace, restores it with Velero into the namespace's sandbox <ns>-rt-<hash> (created with a ResourceQuota of no Pods, claims, storage, NodePorts or load balancers; no tenant binding), only the kinds of args.includedResources, judged by velero-plugin-nacflow as the tenant's restore; compares the items Velero created with the backup's resource list, measures the RTO (Restore created to completed), records status.restoreTest and condition RestoreTested (a Warning event unless it succeeded), then deletes the Restore and the sandbox. One test at a time per namespace, args.maxConcurrent (default 2) in the cluster.",
		Outputs: []string{"result: Succeeded, Failed or Unknown", "rto: seconds", "itemsExpected, itemsRestored: counts"},
		Errors:  "a test that fails or cannot finish is its result, never the plan's; " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*RemoveRestoreTest) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Deletes the Velero Restore and the sandbox namespace of the NonAdminBackup's restore test, once Velero has finished the Restore. Nothing to delete is not an error.",
		Errors:  apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*MeasureUsage) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "After a Completed or PartiallyFailed backup, records status.usage: the size of its contents tarball in object storage (a DownloadRequest BackupContents of its own, then a one-byte range request whose Content-Range gives the size; counted as it streams where the store ignores ranges) and the volume data its DataUploads and PodVolumeBackups moved. Once per backup; a store that does not answer leaves usage unset. nac runs it for every finished NonAdminBackup after its plan, at --usage-measure-rate (older backups after a start): a blueprint need not name it.",
		Outputs: []string{"contentsBytes, volumeBytes, totalBytes: bytes"},
		Errors:  "a Backup that is not the operation's own is terminal; " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*CheckQuota) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Refuses a new NonAdminBackup that would take its namespace past the admin's quota: args.maxBackups (NonAdminBackups that hold or will hold a backup) and args.maxBytes (their status.usage.totalBytes), per namespace and per location (args.locations). Accepted=False/QuotaExceeded naming the figure, the limit and what to delete; nothing is created. Past 80 % a Warning event QuotaNearlyReached. No args: no quota. The same args hold the namespace's NonAdminSchedules: SyncScheduleRuns pauses one whose next run would pass them.",
		Outputs: []string{"backups, bytes: the namespace's before this backup"},
		Errors:  "a refusal is terminal; " + apiRetried,
	}
}
