// Package report holds locklab's result model (result.json, a versioned
// schema whose fields listed in DESIGN.md §6 are a contract), writes it
// atomically, and renders results as tables, plots and Markdown/HTML
// reports. It reads results only, never live servers.
package report
