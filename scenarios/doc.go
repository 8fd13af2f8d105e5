// Package scenarios loads and validates scenario files (DESIGN.md §4) and
// embeds the built-in ones. Every error names the file, the line and the
// field, and says what is allowed; a scenario that loads is ready to run.
package scenarios
