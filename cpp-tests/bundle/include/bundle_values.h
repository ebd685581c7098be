/* A header the bundled kernel reads: its contents, not its folder, are what the key holds. */
#pragma once
#define BUNDLE_VALUE 0x5eed
