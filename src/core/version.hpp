#pragma once
#define STACKALIGN_VERSION "0.1.0"
