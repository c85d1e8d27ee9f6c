// The bit-exact numerics core: every rule of docs/spec.md, header-only, host and device.
#pragma once
#include "numerics/common.hpp"
#include "numerics/formats.hpp"
#include "numerics/halfprec.hpp"
#include "numerics/layout.hpp"
#include "numerics/minifloat.hpp"
#include "numerics/nvfp4.hpp"
#include "numerics/e8m0.hpp"
