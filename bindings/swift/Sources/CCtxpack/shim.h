// The header of the C ABI: the repository's own when the package is used from a
// checkout (bindings/swift/ -> include/), otherwise an installed <ctxpack.h>.
#if __has_include("../../../../include/ctxpack.h")
#include "../../../../include/ctxpack.h"
#else
#include <ctxpack.h>
#endif
