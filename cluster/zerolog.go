package cluster

import "github.com/rs/zerolog"

// toxiproxy logs through zerolog. The server's own logger is the one Start
// gives it (zerolog.Nop), but some toxics log through zerolog's global
// logger instead (the bandwidth toxic writes a JSON line to stderr at
// trace level whenever it is interrupted, that is whenever another toxic is
// added to its link), which no option of toxiproxy reaches. locklab logs
// through slog and nothing else in the program uses zerolog, so zerolog is
// silenced once for the whole program.
func init() { zerolog.SetGlobalLevel(zerolog.Disabled) }
