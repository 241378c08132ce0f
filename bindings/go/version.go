package dptrain

import "dptrain.org/dptrain/internal/swig"

// BindingVersion is this module's version: the project version it is released with, under the tag
// bindings/go/v0.2.0 (README.md, "Versions and tags"). ctest go_module_version fails when it differs from
// the version in the top CMakeLists.txt, and go test checks it against the library's Version().
const BindingVersion = "0.2.0"

// Version returns the library's version string, e.g. "0.2.0".
func Version() string {
	var v string
	if err := call("Version", func() { v = swig.VersionString() }); err != nil {
		return ""
	}
	return v
}

// VersionNumber returns the library's version as major*10000 + minor*100 + patch.
func VersionNumber() int {
	var v uint
	if err := call("VersionNumber", func() { v = swig.VersionNumber() }); err != nil {
		return 0
	}
	return int(v)
}
