package calibrate

import "go.uber.org/zap"

// nopLogger silences the ZooKeeper client's connection messages.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func nopZap() *zap.Logger { return zap.NewNop() }
