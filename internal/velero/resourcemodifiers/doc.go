// Package resourcemodifiers is Velero's resource modifier engine, copied
// unchanged from Velero v1.18.3 (internal/resourcemodifiers, Apache License
// 2.0, the header of each file kept): Go's internal rule keeps nacflow from
// importing it, and Velero's exported way in (pkg/restore's Request) links
// its whole restore machinery (kopia, cloud SDKs) into nac.
//
// nacflow applies a restore's modifiers to each item exactly as Velero will
// (the same parser, validator and patch code), so that the item is checked
// as it will be created (phases' restore pre-check and preview,
// velero-plugin-nacflow). Update it with Velero (TestSameAsVelero checks the
// copy against the Velero of go.mod): `cp $(go env GOMODCACHE)/github.com/vmware-tanzu/velero@<v>/internal/resourcemodifiers/{json_merge_patch,json_patch,resource_modifiers,resource_modifiers_validator,strategic_merge_patch}.go internal/velero/resourcemodifiers/`.
package resourcemodifiers
