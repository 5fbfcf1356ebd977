// The public header included twice; run.sh compiles this file as C99 and as C++17 with
// -Wall -Wextra -Werror -pedantic, links it and runs it.
#include "ctxpack.h"
#include "ctxpack.h"

int main(void) {
    ctxpack_status status = CTXPACK_OK;
    return ctxpack_version()[0] == '\0' || status != CTXPACK_OK;
}
