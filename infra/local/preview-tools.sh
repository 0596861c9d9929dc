#!/usr/bin/env bash
# The system tools the worker's preview converters need (apps/worker/src/previews), from Debian only:
# LibreOffice without a GUI (+ python3-uno for the UNO bridge), Chromium, fonts, and poppler/qpdf to
# check PDFs. Idempotent: installs nothing when every package is already present.
#
#   bash infra/local/preview-tools.sh
set -euo pipefail

PACKAGES=(
  libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui libreoffice-draw-nogui
  python3-uno fonts-dejavu-core poppler-utils qpdf chromium util-linux
)

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null | grep -qx installed || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  echo "[preview-tools] all present"
  exit 0
fi

echo "[preview-tools] installing: ${missing[*]}"
SUDO=()
((EUID == 0)) || SUDO=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "[preview-tools] done"
