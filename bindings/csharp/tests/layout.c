/* Prints the size of every struct of ctxpack.h and the offset of each field, one per
 * line ("ctxpack_str size 16", "ctxpack_str.len 8"), for LayoutTests. run.sh generates
 * layout_fields.h from the header, so a new struct or field shows up here by itself. */
#include <stddef.h>
#include <stdio.h>

#include "ctxpack.h"

#define S(T) printf("%s size %zu\n", #T, sizeof(T));
#define F(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(T, f));

int main(void) {
#include "layout_fields.h"
    return 0;
}
