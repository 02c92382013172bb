// The control beside prepare_includes_backup.cc: prepare including the layer
// it does use (backupdir's metadata files) must compile.
#include "xbak/backupdir/metadata.h"

int xbak_layering_probe() { return 0; }
