// Package treecheck holds a test, run by make test, that keeps the
// repository's tracked files source: no executable binary, and nothing larger
// than MaxFileBytes outside a testdata directory. A clone downloads every
// tracked file of every commit, so a build output committed once costs every
// clone after it.
package treecheck

// MaxFileBytes is the largest tracked file allowed outside testdata (bytes):
// 1 MB. The largest generated file (a CRD) is about a tenth of it.
const MaxFileBytes = 1_000_000
