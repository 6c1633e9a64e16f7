#!/bin/sh
# The one version of clockbench (issue 31): the git tag when the commit has
# one (v1.2.0 -> 1.2.0), else the tag and the commits since it
# (1.2.0-3-gabc1234), else the abbreviated commit (735deb6); "-dirty" when
# tracked files differ from the commit. The Makefile bakes it into the image
# (banner, machine record, QR payload, SBAT) and `clockbench --version`
# prints it; without git it is "unknown" and `make release` wants VERSION=.
cd "$(dirname "$0")/.." || exit 1
# a tree unpacked inside another repository is not that repository's version
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  v=$(git describe --tags --always --dirty --abbrev=7 2>/dev/null) || v=unknown
else
  v=unknown
fi
printf '%s\n' "${v#v}"
