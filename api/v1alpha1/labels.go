package v1alpha1

// Labels and annotations put on every object nacflow creates in the OADP
// namespace. They are OADP NAC's own (its constant package), so Velero objects
// made by nacflow and by OADP's NAC are told apart the same way.
const (
	// OADPLabel marks an object as managed by OADP; value "True".
	OADPLabel = "openshift.io/oadp"
	// OADPLabelValue is the value of OADPLabel.
	OADPLabelValue = "True"
	// ManagedByLabel names the controller that created an object.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByLabelValue is nacflow's controller id in ManagedByLabel, the
	// same as OADP's NAC so that tools written for OADP keep working.
	ManagedByLabelValue = "oadp-nac-controller"

	// NabOriginNACUUIDLabel holds the NACUUID of the NonAdminBackup an object
	// belongs to.
	NabOriginNACUUIDLabel = "openshift.io/oadp-nab-origin-nacuuid"
	// NabOriginNameAnnotation holds the name of that NonAdminBackup.
	NabOriginNameAnnotation = "openshift.io/oadp-nab-origin-name"
	// NabOriginNamespaceAnnotation holds its namespace.
	NabOriginNamespaceAnnotation = "openshift.io/oadp-nab-origin-namespace"
	// NabOriginLabelsAnnotation holds the NonAdminBackup's own labels (JSON)
	// on its Velero Backup, so that backup sync can give them back to a NAB
	// recreated after a cluster rebuild (nacflow's addition).
	NabOriginLabelsAnnotation = "openshift.io/oadp-nab-origin-labels"
	// NabSyncedFromNACUUIDLabel marks a NonAdminBackup created by backup sync
	// from the Velero Backup with that NACUUID (OADP NAC).
	NabSyncedFromNACUUIDLabel = "openshift.io/oadp-nab-synced-from-nacuuid"
	// NabSyncedDroppedFieldsAnnotation, on a NonAdminBackup created by backup
	// sync, records as a JSON object (field name to values) what the sync
	// removed from the Velero Backup's spec: the fields Velero and the
	// controller added that a NonAdminBackup may not carry (nacflow's
	// addition; see phases.SyncedBackupSpec).
	NabSyncedDroppedFieldsAnnotation = "openshift.io/oadp-nab-synced-dropped-fields"

	// NarOriginNACUUIDLabel holds the NACUUID of the NonAdminRestore an
	// object belongs to.
	NarOriginNACUUIDLabel = "openshift.io/oadp-nar-origin-nacuuid"
	// NarOriginNameAnnotation holds the name of that NonAdminRestore.
	NarOriginNameAnnotation = "openshift.io/oadp-nar-origin-name"
	// NarOriginNamespaceAnnotation holds its namespace.
	NarOriginNamespaceAnnotation = "openshift.io/oadp-nar-origin-namespace"

	// NabslOriginNACUUIDLabel holds the NACUUID of the
	// NonAdminBackupStorageLocation an object belongs to.
	NabslOriginNACUUIDLabel = "openshift.io/oadp-nabsl-origin-nacuuid"
	// NabslOriginNameAnnotation holds its name.
	NabslOriginNameAnnotation = "openshift.io/oadp-nabsl-origin-name"
	// NabslOriginNamespaceAnnotation holds its namespace.
	NabslOriginNamespaceAnnotation = "openshift.io/oadp-nabsl-origin-namespace"
)

// The record of who created a NAC object, written by nacflow's requester
// admission webhook (internal/policy/requester) and nowhere else (nacflow's
// addition).
const (
	// RequesterAnnotation holds the record: the JSON of the requesting
	// user (authentication/v1 UserInfo) and the time of the create.
	RequesterAnnotation = "openshift.io/oadp-nacflow-requester"
	// RequesterSignatureAnnotation holds the record's signature.
	RequesterSignatureAnnotation = "openshift.io/oadp-nacflow-requester-signature"
)

// What a Velero Restore nacflow made is pinned to, for Velero's plugin
// velero-plugin-nacflow (Velero Restores live in the OADP namespace, where
// tenants have no rights: these are the admin's word).
const (
	// RestoreBackupUIDAnnotation is the UID of the Velero Backup the
	// restore was checked against: the plugin restores nothing of a
	// Backup of that name with another UID.
	RestoreBackupUIDAnnotation = "nacflow.io/restore-backup-uid"
	// RestoreModifiersDigestAnnotation is the digest of the tenant's
	// resource modifiers its requester asked for (requester.ConfigMapDigest):
	// the plugin applies the ConfigMap that spec.resourceModifier names
	// only when its content has this digest.
	RestoreModifiersDigestAnnotation = "nacflow.io/restore-modifiers-digest"
)

// RestoreTestLabel marks what a restore test of a NonAdminBackup made (the
// sandbox Namespace, its ResourceQuota, the Velero Restore); its value is
// that NonAdminBackup's NACUUID, and the NAB origin annotations name it
// (nacflow's addition).
const RestoreTestLabel = "openshift.io/oadp-nacflow-restore-test"

// NonAdminBackupFinalizer is put on every NonAdminBackup so that nacflow can clean up the
// objects it made in the OADP namespace before the NAC object goes (OADP NAC's
// finalizer name).
const NonAdminBackupFinalizer = "nonadminbackup.oadp.openshift.io/finalizer"

// NonAdminRestoreFinalizer is the NonAdminRestore's finalizer (OADP NAC's).
const NonAdminRestoreFinalizer = "nonadminrestore.oadp.openshift.io/finalizer"

// NonAdminBackupStorageLocationFinalizer is the NonAdminBackupStorageLocation's
// finalizer (OADP NAC's).
const NonAdminBackupStorageLocationFinalizer = "nonadminbackupstoragelocation.oadp.openshift.io/finalizer"

// NadrOriginNACUUIDLabel holds the NACUUID of the NonAdminDownloadRequest
// a Velero DownloadRequest was made for (OADP NAC).
const NadrOriginNACUUIDLabel = "openshift.io/oadp-nadr-origin-nacuuid"

// NadrOriginNameAnnotation and NadrOriginNamespaceAnnotation hold that
// NonAdminDownloadRequest's name and namespace (OADP NAC).
const (
	NadrOriginNameAnnotation      = "openshift.io/oadp-nadr-origin-name"
	NadrOriginNamespaceAnnotation = "openshift.io/oadp-nadr-origin-namespace"
)

// NonAdminDownloadRequestFinalizer is the NonAdminDownloadRequest's
// finalizer: its Velero DownloadRequest is removed before it goes (OADP NAC
// has none and leaves that to Velero's expiry).
const NonAdminDownloadRequestFinalizer = "nonadmindownloadrequest.oadp.openshift.io/finalizer"

// NasOriginNACUUIDLabel holds the NACUUID of the NonAdminSchedule a Velero
// Schedule was made for; Velero copies it onto every Backup the schedule
// takes, and nacflow puts it on the NonAdminBackup of each run (OADP NAC's
// NasOriginNACUUIDLabel).
const NasOriginNACUUIDLabel = "openshift.io/oadp-nas-origin-nacuuid"

// NasOriginNameAnnotation and NasOriginNamespaceAnnotation hold that
// NonAdminSchedule's name and namespace, on the Velero Schedule and (copied
// by Velero) on each of its Backups (OADP NAC).
const (
	NasOriginNameAnnotation      = "openshift.io/oadp-nas-origin-name"
	NasOriginNamespaceAnnotation = "openshift.io/oadp-nas-origin-namespace"
)

// NasOriginStorageLocationAnnotation holds, on the Velero Schedule and each
// of its Backups, the name of the tenant's NonAdminBackupStorageLocation the
// template names ("" for the admin's default): the NonAdminBackup of a run
// asks for it (OADP NAC's).
const NasOriginStorageLocationAnnotation = "openshift.io/oadp-nas-origin-storage-location"

// NonAdminScheduleLabel names, on the NonAdminBackup of a scheduled run, the
// NonAdminSchedule that took it (kubectl get nab -l
// oadp.openshift.io/nonadminschedule=NAME).
const NonAdminScheduleLabel = "oadp.openshift.io/nonadminschedule"

// NonAdminScheduleFinalizer is the NonAdminSchedule's finalizer: its Velero
// Schedule is removed before it goes (OADP NAC's).
const NonAdminScheduleFinalizer = "nonadminschedule.oadp.openshift.io/finalizer"
