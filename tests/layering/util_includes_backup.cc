// Deliberately wrong: a file of the util layer including a header of the
// backup layer, which util must never see. tests/layering/CMakeLists.txt
// builds it in the util layer's view and expects the compiler to refuse it;
// if this ever compiles, the build no longer enforces the layering.
#include "xbak/backup/backup.h"
#include "xbak/util/status.h"

int xbak_layering_probe() { return 0; }
