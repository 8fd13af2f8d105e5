// Package memlock is the lock "mem": one in-process lease table with TTLs,
// fencing tokens and Lost, behind the same locks.Locker contract as the
// network locks, with no network at all. It measures the harness's own
// ceiling (what a run costs when the lock costs nothing), so it is listed by
// `bench list` as a calibration lock and needs no cluster section.
//
// Every client of one process shares one table (Default), so "mem" is a
// real lock only among clients of one process: a scenario running clients
// as separate processes cannot use it. Tokens count per lock name for the
// life of the table and never go back, across runs too.
//
// It imports only locks; never cluster, checker or scenarios.
package memlock
