// Deliberately wrong: prepare (redo and delta apply) including a header of
// backup (taking a backup). Both sit on backupdir, side by side: a prepare
// must never depend on the code that talks to a live server to take a
// backup. tests/layering/CMakeLists.txt expects the compiler to refuse it.
#include "xbak/backup/backup.h"

int xbak_layering_probe() { return 0; }
