// CJSONBytes is header-only (inline functions); SwiftPM wants one source file per C target.
#include "CJSONBytes.h"
