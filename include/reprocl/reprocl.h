/* reprocl: bit-reproducible OpenCL kernels. The umbrella header. */
#ifndef REPROCL_H
#define REPROCL_H
#include "reprocl/version.h"
#include "reprocl/common.h"
#include "reprocl/profile.h"
#include "reprocl/context.h"
#include "reprocl/program.h"
#include "reprocl/digest.h"
#include "reprocl/reduce.h"
#include "reprocl/sparse.h"
#include "reprocl/reference.h"
#include "reprocl/datagen.h"
#include "reprocl/bounds.h"
#include "reprocl/grid.h"
#include "reprocl/stencil.h"
#include "reprocl/tune.h"
#include "reprocl/md.h"
#include "reprocl/split.h"
#include "reprocl/audit.h"
#endif
