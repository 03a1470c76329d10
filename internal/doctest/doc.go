// Package doctest runs the command blocks of README.md and docs/*.md as
// written, as shell scripts, so that a block a user pastes works. It has
// only tests; see doctest_test.go for the rules (what a command block is,
// how a block that must not run is marked, which server it talks to).
package doctest
