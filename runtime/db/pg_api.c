#include "db/pg_api.h"

#include "loader/lazy_lib.h"

static struct pg_api api;
static struct lazy_lib libpq = {
    "libpq.so.5", "PostgreSQL connections need libpq (Debian's libpq5)", NULL, ""
};

const struct pg_api *pg_api_get(char *err, size_t errlen)
{
    static const struct lazy_symbol symbols[] = {
#define FN(name) {"PQ" #name, (void **)&api.name}
        FN(connectStartParams), FN(connectPoll), FN(status), FN(socket), FN(errorMessage),
        FN(finish), FN(setnonblocking), FN(sendQueryParams), FN(flush), FN(consumeInput),
        FN(isBusy), FN(getResult), FN(resultStatus), FN(resultErrorField),
        FN(resultErrorMessage), FN(ntuples), FN(nfields), FN(fname), FN(ftype), FN(getisnull),
        FN(getvalue), FN(getlength), FN(cmdTuples), FN(clear), FN(backendPID),
        FN(transactionStatus), FN(setNoticeProcessor), FN(setSingleRowMode), FN(notifies),
        FN(freemem), FN(connectdbParams), FN(exec),
#undef FN
    };
    if (lazy_lib_load(&libpq, symbols, sizeof symbols / sizeof symbols[0], err, errlen))
        return NULL;
    return &api;
}
