"""Rebuild the transfer suite (issue 30): corpora and golden spans.

    python evaluation/transfer/build_transfer.py

Seventy-two sources, one folder each under ``corpora/`` (the folder is the source):

* six package READMEs, read from the installed distributions' metadata (email-validator,
  threadpoolctl, pyrate-limiter, celery, psutil, orjson; versions in LICENSES), each cut
  at a paragraph boundary to keep the suite small;
* three reports written for this repository in the shapes of issue 30 (``shapes.py``:
  long one-line paragraphs, tables as bare rows after the paragraph that introduces them);
* the two chroma-general corpora (``evaluation/chroma-general``: every second question of
  state_of_the_union; wikitexts cut to its first 40,000 characters, its questions inside);
* four Django docs of the issue-15 suite (``evaluation/suite/corpora/structured``), their questions.
* third round: four Markdown docs whose pipe tables have word cells (chonkie, sse-starlette,
  fasteners, the langsmith sandbox API reference) and a framework's API guide (aiosmtpd's
  ``controller.rst``), each a window of a file the distribution installs (``WINDOWS``).
* fourth round: two reports written by hand in the two shapes (``written/``: a hospital group's
  annual report with blank lines between blocks, a transport authority's budget review with none),
  defusedxml's README (a security guide in reST) and pydantic's changelog (Markdown), windows as above;
  then charset-normalizer's README (a Markdown table of words, CLI help) and dj-database-url's README
  (a reST grid table of words).
* fifth round: a dairy cooperative's financial report written by hand (``written/``: one-line
  paragraphs of 417-911 tokens, bare-row tables right after their lead-in, section headings),
  tinytag's README from its attribute lists to its changelog (lists without full stops), and three
  files Debian packages install (``DEBIAN``): Node.js's BUILDING.md (Markdown tables padded to their
  columns), its ``dns`` API guide, and the XDMCP specification as plain text.
* sixth round: the first five installed distributions in alphabetical order whose long description
  is at least 8,192 bytes, under MIT/BSD/Apache/PSF and not already here (annotated-types, asgiref,
  authlib, banks, colorama: ``PACKAGES``), and an alpine resort operator's annual report written by
  hand (``written/``: one-line paragraphs of 413-596 tokens, bare-row tables after their lead-in, no
  blank line anywhere).
* seventh round: the same rule continued after colorama (dataclasses-json, dirtyjson, django-axes,
  drf-spectacular, fonttools: ``PACKAGES``), and a container port operator's annual report written by
  hand (``written/``: seven one-line paragraphs of about 460-675 tokens, six bare-row tables right after
  their lead-in, one blank line between blocks).
* eighth round: the same rule continued after fonttools (frozenlist, graphql-core, httpcore, httpcore2,
  huggingface-hub: ``PACKAGES``), and a regional airline's annual report written by hand (``written/``:
  seven one-line paragraphs of about 500-635 tokens, six bare-row tables, two of them right after a
  paragraph whose last sentence is their lead-in, no blank line anywhere).
* ninth round: the same rule continued after huggingface-hub (jsonschema-rs, kombu, narwhals, pgvector,
  propcache: ``PACKAGES``), and two annual reports written by hand (``written/``): a cement maker's
  (seven one-line paragraphs of about 490-610 tokens, six bare-row tables, no blank line anywhere) and a
  hotel group's (seven one-line paragraphs of about 455-555 tokens, five bare-row tables, one blank line
  between blocks); in each, two tables follow a paragraph whose last sentence is their lead-in.
* tenth round: three annual reports written by hand (``written/``): a water-bottling and soft-drinks
  maker's (seven one-line paragraphs of about 465-675 tokens, five bare-row tables, no blank line
  anywhere), a sawmill group's (six one-line paragraphs of about 530-610 tokens, five bare-row tables,
  one blank line between blocks) and a regional bank's leasing arm's (seven one-line paragraphs of about
  450-660 tokens, five bare-row tables, short numbered headings, no blank line anywhere); in each, a
  five-year record whose rows are years, and two tables follow a paragraph whose last sentence is their
  lead-in.
* eleventh round: the same rule continued after propcache (pycparser, redis, requests-toolbelt:
  ``PACKAGES``): a C parser's README in reST (sections, code blocks, a definition list of files), a
  client library's README in Markdown (a version table, code blocks, a long section on bulk hash
  import) and a README followed by a long reST changelog of terse bullets.
* eleventh round (continued): the sixth round's rule continued after requests-toolbelt (rich and ruff:
  ``PACKAGES``): a terminal-formatting library's README (HTML ``<details>`` sections of prose, code and
  screenshot links) and a linter's README (feature bullets, testimonials, shell blocks, a TOML default
  configuration, a long list of plugin links), each whole; no tables.
* eleventh round: a ferry and coastal shipping operator's annual report written by hand (``written/``:
  six sections, eight one-line paragraphs of about 515-610 tokens, one blank line between blocks and none
  between a lead-in and its table); six bare-row tables, three small (4-6 rows and a header, 4-5 columns)
  and three large (13-14 rows and a header, 7 columns, wordy cells: a five-year record whose rows are
  measures and columns years, a route table and a fleet list with yards); two tables follow a paragraph
  whose last sentence is their lead-in.
* twelfth round: the sixth round's rule continued after ruff (semchunk, sentence-transformers,
  sortedcontainers, sympy, transformers: ``PACKAGES``): a text-chunking library's README (parameter
  paragraphs repeated under two functions, numbered lists of its algorithm), an embedding library's README
  (four quick starts that open alike, nested link lists), a sorted-collections README in reST (named
  hyperlink targets, the Apache notice), a computer-algebra README (hard-wrapped prose, shell commands, a
  history) and a model library's README (HTML, ``<details>`` sections of examples, near-identical bullets),
  each whole; no tables.
* twelfth round: a waste-management company's annual report written by hand (``written/``: six
  sections, eight one-line paragraphs of about 460-565 tokens, no blank line anywhere); six bare-row
  tables, three small (5-6 rows and a header, 4-5 columns: a five-year record whose rows are years,
  materials sold, revenue by segment) and three large (11-13 rows and a header, 6-7 columns, wordy cells:
  council contracts, sites, projects); two tables follow a paragraph whose last sentence is their lead-in.
* thirteenth round: the sixth round's rule continued after transformers (typer, wcwidth, xxhash, yarl:
  ``PACKAGES``; only four distributions remain after transformers that meet it): a CLI library's README
  (HTML, console blocks of help screens drawn with box characters, a dependency list), a terminal-width
  library's README in reST (doctest blocks with escape sequences, a section per function, defaults of
  keyword arguments), a hash binding's README in reST (line blocks of method lists, caveats, a long
  changelog of terse bullets) and a URL library's README and towncrier changelog (the aio-libs template of
  frozenlist and propcache), the first three whole, wcwidth and yarl cut at a paragraph boundary; no tables.
* thirteenth round: a regional rail freight operator's annual report written by hand (``written/``:
  five sections, eight one-line paragraphs of about 455-490 tokens, one blank line between blocks and
  none between a lead-in and its table); six bare-row tables, three small (5-6 rows and a header, 4-5
  columns: a five-year record whose rows are years, traffic by commodity, revenue by business) and three
  large (12-13 rows and a header, 6-7 columns, wordy cells: flows with customers and routes, terminals
  and depots, projects); two tables follow a paragraph whose last sentence is their lead-in.
* fifteenth round: npm package READMEs committed under ``npm/`` (``NPM``): the first five direct
  dependencies of express 5.3.0 in alphabetical order whose README in the ``latest`` tarball is at
  least 8,192 bytes under MIT/ISC/BSD/Apache/0BSD (body-parser, cookie, debug, depd, qs): a middleware's
  option reference and error list (near-identical option paragraphs under four parsers), a cookie
  library's API and attribute list, a logging utility's README with two Markdown tables of words, a
  deprecation library's API with diagrams drawn in a code block, a query-string library's long guide of
  options and code examples; each from its first character, cut at a paragraph boundary as above.
* sixteenth round: the fifteenth round's rule continued after qs (``NPM``): only router and send of the
  seven dependencies left qualify: a router's API (TypeScript declarations, option bullets, a section per
  method, a list of tracing-context fields, cut at a paragraph boundary) and a file-streaming library's
  option reference (one short section per option, an event list, examples), whole. Two annual reports
  written by hand (``written/``): a hospital and hotel laundry group's (nine one-line paragraphs, six
  bare-row tables, one blank line between blocks) and a ropeway and ski-lift maker's (nine one-line
  paragraphs, six bare-row tables, numbered headings, no blank line anywhere).
* eighteenth round: fastify 5.12.8's direct dependencies (its ``latest``) in code-point order of their names,
  scoped first, the same tests; the first three (``NPM``): @fastify/ajv-compiler (a compiler's README: a version
  table, Ajv's default options in a code block, Fastify configuration examples, the standalone compiler's two
  modes), whole; avvio (a plugin loader's guide and API: trees and lifecycles drawn with box characters in code
  blocks, a nested table of contents, one short section per option, event and property) and fast-json-stringify
  (a serializer's README: two benchmark outputs of about 45 lines each, an option list, two Markdown tables of
  words, a section per schema keyword), each cut at a paragraph boundary.
* nineteenth round: the eighteenth round's rule continued after fast-json-stringify, the next three (``NPM``):
  find-my-way (an HTTP router's README: a table of contents, one paragraph and example per constructor option, a
  compiler mode, path formats, the match order, ``off`` in four forms), cut at a paragraph boundary;
  light-my-request (an injection library's README: nested option and response bullet lists, a benchmark output,
  ``bindInject``, method chaining), whole; secure-json-parse (a ``JSON.parse`` replacement's README: two option
  lists alike under ``parse`` and ``scan``, five benchmark outputs drawn as tables with box characters, the
  BSD-3-Clause text), whole.
* twentieth round: semver (``NPM``; a version parser's README: the CLI's help, range syntax (hyphen, X-, tilde and
  caret ranges as ``:=`` bullet lists), a BNF grammar, function lists), cut at a paragraph boundary; by a new rule,
  mocha 12.0.3's dependencies in code-point order, the first two: chokidar (a file watcher's README: options with
  defaults in a code block and as nested bullets, a Markdown table of events, troubleshooting, a changelog), whole,
  and diff (jsdiff's README: one bullet per function with indented option lists, long one-line paragraphs), cut at a
  paragraph boundary.
* twentieth round: a salt producer's annual report written by hand (``written/``: a rock-salt mine, brine fields,
  white-salt works and storage in worked-out galleries and caverns; nine one-line paragraphs, six bare-row tables,
  short headings, no blank line anywhere).
* twenty-second round: the twentieth round's rule (b) continued after diff (mocha 12.0.3's dependencies in code-point
  order, ``NPM``): workerpool (a worker pool's README: the thread-pool pattern, loading, dynamic and dedicated
  workers, the pool's options as bullets with nested values, the pool's, promise's and worker's functions, events,
  abort listeners), cut at a paragraph boundary; the only one left that qualifies.
* twenty-second round: a container-glass maker's annual report written by hand (``written/``: six furnaces at three
  works, forming machines, a decorating plant, a plant for recycled glass and a sand quarry; nine one-line
  paragraphs, six bare-row tables, short headings, one blank line between blocks).
* twenty-third round: a new rule (mocha's dependencies used up): eslint 10.16.0's direct dependencies (its
  ``latest``) in code-point order of their names, scoped first, the same tests, the first two (``NPM``):
  @eslint/config-array (a config array's README: glob-matched config objects, ``files`` and ``ignores`` with
  functions, subarrays and negated patterns, config functions, normalizing, ignored files and directories as two
  near-identical bullet lists, caching) and @eslint/plugin-kit (a plugin toolkit's README: a comment parser's
  directive and value formats, traversal steps, disable directives, a base class's members as bullets), both
  whole, each ending in ESLint's sponsors as HTML logo links.
* twenty-fourth round: the twenty-third round's rule continued after @eslint/plugin-kit, the next two (``NPM``):
  ajv (a JSON Schema validator's README: badges and sponsors' logos as HTML, a list of documentation links, a
  benchmark chart link, feature bullets with nested standards, install, a getting-started example, changes,
  conduct, security and support notes) and eslint-scope (a scope analyzer's README: ``analyze()``'s options as
  bullets with defaults, a traversal example, the scope manager's properties and methods as bold-led bullets with
  nested arguments, the scope, global-scope and variable objects' properties, ESLint's sponsors as HTML), both
  whole.
* twenty-fifth round: the same rule continued after eslint-scope, the next two (``NPM``): espree (a JavaScript
  parser's README: ``parse()`` and ``tokenize()`` with their output in HTML ``<details>``, four exported values, the
  options in one commented code block, Esprima compatibility, differences from 2.x, known incompatibilities, a
  question-style FAQ, ESLint's sponsors as HTML; whole) and file-entry-cache (a file-metadata cache's README: badges,
  features, a table of contents, getting-started examples, breaking changes from v10 to v11 with migration code,
  changes from v9 to v10, two option lists with defaults, the API as one-line bullets, the file descriptor, path
  handling and portability examples; cut inside its path-security section).
* twenty-sixth round: the same rule continued after file-entry-cache, the next two (``NPM``): ignore (a gitignore
  matcher's README: a badge table, usage examples, the methods with their arguments and TypeScript interfaces,
  pathname conventions, options, known differences from git, upgrade notes; cut before its collaborators) and
  optionator (an option parser's README: usage, four functions with arguments, returns and examples, the settings
  format as one indented type block, property lists with defaults, the argument format; whole).
* twenty-seventh round, rule (a'): webpack 5.113.0's dependencies (its ``latest``) in code-point order, scoped first,
  the same tests, the first two (``NPM``): enhanced-resolve (a module resolver's README: install, the public API
  with its call shapes, an arguments table and callback examples, the caching filesystem, exported plugins,
  creating a resolver; cut before its resolver options) and minimizer-webpack-plugin (a minimizing plugin's
  README: the built-in minimizers by language, getting started, source maps, the options ``test`` to ``minify``
  with their types, defaults and examples; cut inside ``minify``'s function form).
* twenty-eighth round, rule (a): rule (a') continued after minimizer-webpack-plugin (webpack 5.113.0's dependencies,
  its ``latest``), the same tests, the next two (``NPM``): schema-utils (an options validator's README: ``validate``
  and its three arguments, ``name``, ``baseDataPath`` and ``postFormatter`` with defaults and error output, loader
  and plugin examples, precompiled schemas and their CLI, turning validation off; whole) and tapable (a hook library's
  README: usage, the plugin API with tap options, ``withOptions``, hook types, the hook classes one by one with
  examples, interception; cut before its interceptor handlers table).
* twenty-ninth round, rule (a): webpack's list continued after tapable (webpack 5.113.0), the first that qualifies,
  then vite 8.4.1's dependencies (its ``latest``) in code-point order, the same tests, two in all (``NPM``):
  webpack-sources (a source-map library's README: the ``Source`` base class and its methods, the source classes
  with their constructor arguments, ``CachedSource``, ``ReplaceSource``, ``CompatSource``, a source-map helper;
  whole) and picomatch (a glob matcher's README: why, usage, the API methods with params and examples, the options
  tables and examples, basic globbing, matching against Bash; cut before its extglobs table).
* thirtieth round, rule (a): gulp 5.0.1's dependencies (its ``latest``) in code-point order, the same tests, the
  first two (``NPM``): gulp-cli (a command-line tool's README: usage, custom task metadata, tasks, shell completion,
  compilers, the environment, a configuration table and an HTML table of flags; whole) and undertaker (a task
  registry's README: usage, the API methods, custom registries, sharing tasks and functionality; whole).
* thirty-first round, rule (a): yargs 18.2.0's dependencies (its ``latest``) in code-point order, the same tests, the
  first that qualifies, then axios 1.21.1's, two in all (``NPM``): yargs-parser (an option parser's README: examples
  for Node.js, Deno, ESM and browsers, the ``parser`` and ``detailed`` API with their options and results, the
  configuration settings each with its default, key and examples; whole) and form-data (a multipart form library's
  README: usage, custom options, other ways of submitting, the methods, other libraries, notes; whole).
* thirty-second round, rule (a): vinyl-fs at gulp 5.0.1's ``latest`` (read in the thirtieth round, not needed then),
  then nodemon 3.1.14's dependencies (its ``latest``) in code-point order, the same tests, as many as needed to make
  two; none of nodemon's qualifies, so one (``NPM``): vinyl-fs (a file system adapter's README: what Vinyl and a Vinyl
  adapter are, usage, ``src``, ``dest`` and ``symlink`` with their options, symbolic links on Windows; whole).
* thirty-third round, rule (a): sequelize 6.37.8's dependencies (its ``latest``) in code-point order, scoped first,
  the same tests, the first two (``NPM``): inflection (a string inflector's README: where it comes from, the API list,
  each function with its arguments and example code, credits and the licence; whole) and uuid (a UUID library's
  README: quickstart, an API summary table, each method with a table of arguments and examples, version 8, the
  command line, ``options`` for timestamp UUIDs, support, a known issue on React Native; whole).
* thirty-fourth round, rule (a): mongoose 9.13.2's dependencies (its ``latest``) in code-point order, scoped first,
  the same tests, the first two (``NPM``): kareem (a hooks library's README: pre hooks, post hooks, ``wrap()``,
  ``createWrapper()`` with ``getOptions``, ``clone()`` and ``merge()``, each as headed examples; whole) and mongodb (a
  database driver's README: quick links, release integrity, bugs and support, compatibility, installation, driver
  extensions, a quick start, error handling, nightly releases, experimental features; whole).
* twenty-third round: a seed and plant-breeding company's annual report written by hand (``written/``: breeding
  stations for wheat, barley, vegetables, grass and rape, three seed plants, a seed laboratory and a gene bank; nine
  one-line paragraphs, six bare-row tables, short headings, no blank line anywhere).
* twenty-fourth round: a woollen and worsted cloth maker's annual report written by hand (``written/``: a wool scour,
  a combing works, spinning mills, a dyehouse, weaving mills for suiting, tweed and seat cloth, a finishing works;
  nine one-line paragraphs, six bare-row tables, short headings, one blank line between blocks).
* twenty-fifth round: a canal company's annual report written by hand (``written/``: a canal and river navigation
  fed by five reservoirs and boreholes, water sold to a water company, industry and farmers, marinas, hire boats,
  barge freight, a lock-gate yard, a hydro station in a weir; nine one-line paragraphs, six bare-row tables, headings
  in Title Case, one blank line between blocks).
* twenty-sixth round: a glasshouse grower's annual report written by hand (``written/``: tomatoes, cucumbers,
  peppers and strawberries under glass, a nursery, an insectary, gas engines, heat from a sugar factory and a deep
  well; nine one-line paragraphs, six bare-row tables, headings in capitals, two blank lines before each heading).
* twenty-seventh round: a salmon farmer's annual report written by hand (``written/``: salmon in sea lochs and the
  Outer Isles, organic salmon, rainbow trout, halibut and salmon in tanks on land, hatcheries for smolts and for
  lumpfish and wrasse, a harvest station, a smokehouse, a swarm of jellyfish; nine one-line paragraphs, six bare-row
  tables, numbered headings, one blank line between blocks).
* twenty-eighth round: a lifeboat and workboat builder's annual report written by hand (``written/``: all-weather
  and inshore lifeboats for a rescue charity, pilot boats, wind farm crew boats and patrol boats of aluminium,
  enclosed and free-fall lifeboats for ships and platforms with their davits, cruise-ship tenders, service bases, a
  sea school, cracked welds and a closed yard; nine one-line paragraphs, six bare-row tables, headings in capitals,
  one blank line between blocks).
* twenty-ninth round: a bell foundry's annual report written by hand (``written/``: church, carillon, clock and
  great bells cast in loam at Quenby and tuned on lathes, handbells, tower clocks and their winders, bell frames,
  bellhanging teams, a lost-wax art foundry, carillon offices at Utrecht and Philadelphia, a ringing school, a
  flawed great bell recast and a closed clock works; nine one-line paragraphs, six bare-row tables, headings
  underlined by ``=``, one blank line between blocks).
* thirtieth round: a honey producer's and bee farmer's annual report written by hand (``written/``: honeybee
  colonies kept in apiaries from bee farms and moved by night to orchards, fields and the heather, a honey house
  that extracts and jars honey, heather honey pressed from the comb, a queen-rearing station, bumblebee nests for
  glasshouses, a candle works, a meadery, a bee school, a foulbrood outbreak and a closed bee farm; nine one-line
  paragraphs, six bare-row tables, two levels of numbered headings (``1.``, ``2.1``), one blank line between
  blocks).
* thirty-first round: a pencil maker's annual report written by hand (``written/``: graphite and clay pressed into
  leads and fired, colour leads mixed and dried, slats of incense cedar sawn in California and waxed at a slat mill,
  pencils glued, shaped, painted and stamped at a works of 1898, artists' pencils and willow charcoal at a bobbin
  mill, printed pencils, lime woods planted for British slats, a pencil museum, yellow colour pencils recalled for
  a pigment's barium and a water-wheel mill closed; nine one-line paragraphs, six bare-row tables, section headings
  in Markdown bold on their own lines (``**Chair's statement**``), one blank line between blocks).
* thirty-second round: a potter's annual report written by hand (``written/``: earthenware, vitrified hotel ware
  and bone china made from ball clay dug at its own pit, china clay, stone and bone ash, slip pressed and cast,
  ware fired twice in tunnel kilns, printed, gilded and painted by hand, stoneware cookware fired in electric kilns,
  a museum with two bottle ovens, showrooms for hotels in New York and Dubai, a tunnel kiln's roof fallen in and a
  works of 1868 closed; nine one-line paragraphs, six bare-row tables, section headings as a short line of their
  own in sentence case (``Chair's statement``), one blank line between blocks).
* thirty-third round: a slate quarry's annual report written by hand (``written/``: roofing slates split by hand
  from blocks sawn or blasted from two quarries' faces, floor tiles, worktops, sills and headstones sawn and
  lettered, aggregate and chippings crushed from the tips, a steam railway and caverns open to visitors, a quarry
  face slid in January and a slab mill of 1884 closed; nine one-line paragraphs, six bare-row tables, one of them
  with a ``Total`` row and units in its cells, section headings in Title Case ending in a colon on a line of their
  own (``Chair's Statement:``), one blank line between blocks).
* thirty-fourth round: an organ builder's annual report written by hand (``written/``: new organs for churches,
  concert halls and colleges, pipes cast from tin and lead and voiced by hand, cases of seasoned oak, old organs
  restored, chamber organs hired to orchestras, organs tuned under yearly contracts, a museum of organs, a fire in
  the pipe shop's loft in March and a tuning workshop of 1923 closed; nine one-line paragraphs, six bare-row tables,
  section headings in capital letters on a line of their own (``CHAIR'S STATEMENT``), one blank line between
  blocks).

``questions.jsonl``: question, document, spans and ``type`` ("doc", "para", "row",
"mdrow": a cell of a Markdown table of words, "rstrow": a row of a reST grid table, "boxrow": a row of a table drawn with box characters, "chroma"); a quote of ``questions.src.jsonl`` must occur exactly once in its document.
"""

from __future__ import annotations

import csv
import glob
import gzip
import json
import site
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import shapes  # noqa: E402

PACKAGES = {  # source folder: (distribution, file name, characters kept)
    "pkg-email-validator": ("email_validator", "README.md", 13000),
    "pkg-threadpoolctl": ("threadpoolctl", "README.md", 11500),
    "pkg-pyrate-limiter": ("pyrate_limiter", "README.md", 11000),
    "pkg-celery": ("celery", "README.rst", 9000),
    "pkg-psutil": ("psutil", "README.rst", 9000),
    "pkg-orjson": ("orjson", "README.md", 9500),
    # Sixth round: the first five installed distributions (alphabetical) whose long description is
    # at least 8,192 bytes, under MIT/BSD/Apache/PSF, not already in the suite (docs/benchmarks.md).
    "pkg-annotated-types": ("annotated_types", "README.md", 20000),
    "pkg-asgiref": ("asgiref", "README.rst", 20000),
    "pkg-authlib": ("authlib", "README.md", 20000),
    "pkg-banks": ("banks", "README.md", 20000),
    "pkg-colorama": ("colorama", "README.rst", 20000),
    # Seventh round: the same rule continued after colorama (the next five).
    "pkg-dataclasses-json": ("dataclasses_json", "README.md", 20000),
    "pkg-dirtyjson": ("dirtyjson", "README.rst", 20000),
    "pkg-django-axes": ("django_axes", "README.rst", 20000),
    "pkg-drf-spectacular": ("drf_spectacular", "README.rst", 20000),
    "pkg-fonttools": ("fonttools", "README.rst", 20000),
    # Eighth round: the same rule continued after fonttools (the next five).
    "pkg-frozenlist": ("frozenlist", "README.rst", 20000),
    "pkg-graphql-core": ("graphql_core", "README.md", 20000),
    "pkg-httpcore": ("httpcore", "README.md", 20000),
    "pkg-httpcore2": ("httpcore2", "README.md", 20000),
    "pkg-huggingface-hub": ("huggingface_hub", "README.md", 20000),
    # Ninth round: the same rule continued after huggingface-hub (the next five).
    "pkg-jsonschema-rs": ("jsonschema_rs", "README.md", 20000),
    "pkg-kombu": ("kombu", "README.rst", 20000),
    "pkg-narwhals": ("narwhals", "README.md", 20000),
    "pkg-pgvector": ("pgvector", "README.md", 20000),
    "pkg-propcache": ("propcache", "README.rst", 20000),
    # Eleventh round: the same rule continued after propcache (the next five).
    "pkg-pycparser": ("pycparser", "README.rst", 20000),
    "pkg-redis": ("redis", "README.md", 20000),
    "pkg-requests-toolbelt": ("requests_toolbelt", "README.rst", 20000),
    # Eleventh round (continued): rich and ruff.
    "pkg-rich": ("rich", "README.md", 20000),
    "pkg-ruff": ("ruff", "README.md", 20000),
    # Twelfth round: the same rule continued after ruff (the next five).
    "pkg-semchunk": ("semchunk", "README.md", 20000),
    "pkg-sentence-transformers": ("sentence_transformers", "README.md", 20000),
    "pkg-sortedcontainers": ("sortedcontainers", "README.rst", 20000),
    "pkg-sympy": ("sympy", "README.md", 20000),
    "pkg-transformers": ("transformers", "README.md", 20000),
    # Thirteenth round: the same rule continued after transformers (the four that remain).
    "pkg-typer": ("typer", "README.md", 20000),
    "pkg-wcwidth": ("wcwidth", "README.rst", 20000),
    "pkg-xxhash": ("xxhash", "README.rst", 20000),
    "pkg-yarl": ("yarl", "README.rst", 20000),
}
# Third round (issue 30): Markdown pipe tables whose cells are words, and API guides. Each is a
# window of a file the distribution installs: (distribution, file inside the package or None for
# the metadata's long description, first line kept, first line left out or None for the end,
# characters kept at most).
WINDOWS = {
    "pkg-chonkie": ("chonkie", None, "README.md", "## \u2702\ufe0f Chunkers", "## \U0001f916 AI Agent Skills", 20000),
    "pkg-sse-starlette": ("sse_starlette", None, "README.md", "# Server-Sent Events", "## Contributing", 20000),
    "pkg-fasteners": ("fasteners", None, "README.md", "Fasteners\n=====", None, 20000),
    "pkg-langsmith-sandbox": (
        "langsmith",
        "langsmith/sandbox/README.md",
        "README.md",
        "## Sandbox Lifetime & TTL",
        None,
        20000,
    ),
    "pkg-aiosmtpd": ("aiosmtpd", "aiosmtpd/docs/controller.rst", "controller.rst", ".. _controller:", None, 19000),
    # Fourth round: a security guide in reST (long prose, a csv-table) and a Markdown changelog.
    "pkg-defusedxml": ("defusedxml", None, "README.rst", "Synopsis\n========", "XMLSchema location\n---", 20000),
    "pkg-pydantic-changelog": ("pydantic", None, "CHANGELOG.md", "## Changelog", "## v2.14.0b1 ", 20000),
    # Fourth round, second batch: a Markdown table of words and CLI help; a reST grid table of words.
    "pkg-charset-normalizer": (
        "charset_normalizer",
        None,
        "README.md",
        "> All IANA character set names",
        "# Changelog\n",
        20000,
    ),
    "pkg-dj-database-url": (
        "dj_database_url",
        None,
        "README.rst",
        "This simple Django utility",
        "Contributing\n---",
        20000,
    ),
    # Fifth round: an option list and a changelog without full stops.
    "pkg-tinytag": ("tinytag", None, "README.md", "### Common Metadata", None, 20000),
}
# Fifth round: files that Debian packages install (not Python distributions), windows as above:
# (path, file name, first line kept, first line left out or None, characters kept at most). A
# README whose Markdown tables are padded to their columns, an API guide, an RFC-like specification.
DEBIAN = {
    "deb-node-building": ("/usr/share/doc/nodejs/BUILDING.md", "BUILDING.md", "## Supported platforms", None, 20000),
    "deb-node-dns": (
        "/usr/share/doc/nodejs/api/dns.md",
        "dns.md",
        "## `dns.lookup(hostname[, options], callback)`",
        "## `dns.setDefaultResultOrder(order)`",
        20000,
    ),
    "deb-xdmcp": (
        "/usr/share/doc/libxdmcp-dev/xdmcp.txt.gz",
        "xdmcp.txt",
        "X Display Manager Control Protocol\n\nX.Org Standard",
        None,
        20000,
    ),
    # fourteenth round: the first five directories of /usr/share/doc in alphabetical order whose README
    # (README, README.md, README.txt or README.rst, maybe gzipped) is at least 8,192 bytes, UTF-8, under
    # Expat/MIT, BSD, Apache-2.0, ISC, PSF, Zlib or public domain by the package's copyright file, and not
    # already here (evaluation/transfer/README.md lists every package examined); each from its first line, cut as above.
    "deb-libffi": (
        "/usr/share/doc/libffi8/README.md.gz",
        "README.md",
        "libffi-3.4.4 was released on October 23, 2022.  Check the libffi web",
        None,
        20000,
    ),
    "deb-python3.11": (
        "/usr/share/doc/python3.11/README.rst.gz",
        "README.rst",
        "This is Python version 3.11.2",
        None,
        20000,
    ),
    "deb-redis-server": (
        "/usr/share/doc/redis-server/README.md.gz",
        "README.md",
        "This README is just a fast *quick start* document.",
        None,
        20000,
    ),
    "deb-xz-utils": ("/usr/share/doc/xz-utils/README.gz", "README", "XZ Utils\n========", None, 20000),
    "deb-zstd": (
        "/usr/share/doc/zstd/README.md.gz",
        "README.md",
        '<p align="center"><img src="https://raw.githubusercontent.com/facebook/zstd/dev/doc/images/zstd_logo86.png"',
        None,
        20000,
    ),
}
# Fifteenth round: READMEs of npm packages, committed verbatim under ``npm/<package>/`` with the package's
# LICENSE: (path under this folder, file name, characters kept at most, cut by ``_cut``). The first five
# direct dependencies of express 5.3.0 (its ``latest``) in alphabetical order whose README in their own
# ``latest`` tarball is at least 8,192 bytes, UTF-8, under MIT, ISC, BSD-2/3-Clause, Apache-2.0 or 0BSD
# and not already here (README.md lists every dependency examined).
NPM = {
    "npm-body-parser": ("npm/body-parser/README.md", "README.md", 20000),
    "npm-cookie": ("npm/cookie/README.md", "README.md", 20000),
    "npm-debug": ("npm/debug/README.md", "README.md", 20000),
    "npm-depd": ("npm/depd/README.md", "README.md", 20000),
    "npm-qs": ("npm/qs/README.md", "README.md", 20000),
    # Sixteenth round: the same rule continued after qs; of the seven dependencies left (range-parser, router,
    # send, serve-static, statuses, type-is, vary) only these two have a README of at least 8,192 bytes.
    "npm-router": ("npm/router/README.md", "README.md", 20000),
    "npm-send": ("npm/send/README.md", "README.md", 20000),
    # Seventeenth round: koa 3.3.0's dependencies (its ``latest``) in alphabetical order, the same tests; of the
    # eighteen only cookies has a README of at least 8,192 bytes, so koa 3.3.0's own README makes up the number.
    "npm-cookies": ("npm/cookies/README.md", "README.md", 20000),
    "npm-koa": ("npm/koa/README.md", "README.md", 20000),
    # Eighteenth round: fastify 5.12.8's dependencies (its ``latest``) in code-point order of their names (scoped
    # first), the same tests, the first three: @fastify/ajv-compiler (8,378 bytes), then after @fastify/error,
    # @fastify/fast-json-stringify-compiler, @fastify/proxy-addr and abstract-logging (all under 8,192 bytes)
    # avvio and fast-json-stringify; all MIT.
    "npm-fastify-ajv-compiler": ("npm/fastify-ajv-compiler/README.md", "README.md", 20000),
    "npm-avvio": ("npm/avvio/README.md", "README.md", 20000),
    "npm-fast-json-stringify": ("npm/fast-json-stringify/README.md", "README.md", 20000),
    # Nineteenth round: the same rule continued after fast-json-stringify, the next three: find-my-way (36,552
    # bytes, MIT), light-my-request (14,070, BSD-3-Clause), then after pino, process-warning and rfdc (all under
    # 8,192 bytes) secure-json-parse (15,885, BSD-3-Clause).
    "npm-find-my-way": ("npm/find-my-way/README.md", "README.md", 20000),
    "npm-light-my-request": ("npm/light-my-request/README.md", "README.md", 20000),
    "npm-secure-json-parse": ("npm/secure-json-parse/README.md", "README.md", 20000),
    # Twentieth round: (a) semver 7.8.6 (25,669 bytes, ISC), the last of fastify 5.12.8's dependencies that the
    # same rule reaches; (b) a new rule: mocha 12.0.3's dependencies (its ``latest``) in code-point order, the
    # same tests, the first two: after browser-stdout (611 bytes), chokidar (12,946, MIT), then after debug (here)
    # diff (35,757, BSD-3-Clause).
    "npm-semver": ("npm/semver/README.md", "README.md", 20000),
    "npm-chokidar": ("npm/chokidar/README.md", "README.md", 20000),
    "npm-diff": ("npm/diff/README.md", "README.md", 20000),
    # Twenty-second round: rule (b) continued after diff, the same tests, the next two: of the twelve left only
    # workerpool (22,786 bytes, Apache-2.0), the last; glob and minimatch are under BlueOak-1.0.0, the other nine
    # under 8,192 bytes, so mocha's dependencies are used up with one.
    "npm-workerpool": ("npm/workerpool/README.md", "README.md", 20000),
    # Twenty-third round: a new rule, eslint 10.16.0's dependencies (its ``latest``) in code-point order of their
    # names (scoped first), the same tests, the first two: after @eslint-community/eslint-utils (1,684 bytes) and
    # @eslint-community/regexpp (5,663), @eslint/config-array (16,883, Apache-2.0), then after
    # @eslint/config-helpers (6,326) and @eslint/core (3,413) @eslint/plugin-kit (11,910, Apache-2.0).
    "npm-eslint-config-array": ("npm/eslint-config-array/README.md", "README.md", 20000),
    "npm-eslint-plugin-kit": ("npm/eslint-plugin-kit/README.md", "README.md", 20000),
    # Twenty-fourth round: the same rule continued after @eslint/plugin-kit, the next two: after @humanfs/node
    # (3,148 bytes), @humanwhocodes/module-importer (2,092), @humanwhocodes/retry (4,267) and @types/estree (458),
    # ajv 8.20.0 (13,781, MIT), then after cross-spawn (6,674), debug (here) and escape-string-regexp (904)
    # eslint-scope 9.1.2 (11,171, BSD-2-Clause).
    "npm-ajv": ("npm/ajv/README.md", "README.md", 20000),
    "npm-eslint-scope": ("npm/eslint-scope/README.md", "README.md", 20000),
    # Twenty-fifth round: the same rule continued after eslint-scope, the next two: after eslint-visitor-keys
    # (5,998 bytes) espree 11.2.0 (13,282, BSD-2-Clause), then after esquery (2,182), esutils (6,828) and
    # fast-deep-equal (3,323) file-entry-cache 11.1.5 (28,117, MIT; cut).
    "npm-espree": ("npm/espree/README.md", "README.md", 20000),
    "npm-file-entry-cache": ("npm/file-entry-cache/README.md", "README.md", 20000),
    # Twenty-sixth round: the same rule continued after file-entry-cache, the next two: after find-up (6,172 bytes)
    # and glob-parent (3,228) ignore 7.0.17 (20,103, MIT; cut), then after imurmurhash (4,763), is-glob (7,145),
    # json-stable-stringify-without-jsonify (2,767), minimatch (BlueOak-1.0.0) and natural-compare (3,352)
    # optionator 0.9.4 (15,047, MIT).
    "npm-ignore": ("npm/ignore/README.md", "README.md", 20000),
    "npm-optionator": ("npm/optionator/README.md", "README.md", 20000),
    # Twenty-seventh round, rule (a'): webpack 5.113.0's dependencies (its ``latest``) in code-point order of their
    # names (scoped first), the same tests, the first two: after @types/estree (458 bytes), @types/json-schema (622),
    # @webassemblyjs/ast (4,788), @webassemblyjs/wasm-edit (1,359), @webassemblyjs/wasm-parser (577), browserslist
    # (2,279) and chrome-trace-event (893) enhanced-resolve 5.27.2 (65,606, MIT; cut), then after events (2,314),
    # graceful-fs (4,741) and mime-db (4,949) minimizer-webpack-plugin 5.14.1 (114,050, MIT; cut).
    "npm-enhanced-resolve": ("npm/enhanced-resolve/README.md", "README.md", 20000),
    "npm-minimizer-webpack-plugin": ("npm/minimizer-webpack-plugin/README.md", "README.md", 20000),
    # Twenty-eighth round, rule (a): rule (a') continued after minimizer-webpack-plugin (webpack 5.113.0, its
    # ``latest``), the same tests, the next two: schema-utils 4.8.5 (8,982, MIT; whole) and tapable 2.3.4 (30,203,
    # MIT; cut); watchpack and webpack-sources not needed.
    "npm-schema-utils": ("npm/schema-utils/README.md", "README.md", 20000),
    "npm-tapable": ("npm/tapable/README.md", "README.md", 20000),
    # Twenty-ninth round, rule (a): webpack's list continued after tapable (webpack 5.113.0), after watchpack (6,723
    # bytes) webpack-sources 3.7.1 (8,223, MIT; whole); then vite 8.4.1's dependencies (its ``latest``), after
    # lightningcss (6,058; MPL-2.0) picomatch 4.0.7 (28,319, MIT; cut); postcss, rolldown and tinyglobby not needed.
    "npm-webpack-sources": ("npm/webpack-sources/README.md", "README.md", 20000),
    "npm-picomatch": ("npm/picomatch/README.md", "README.md", 20000),
    # Thirtieth round, rule (a): gulp 5.0.1's dependencies (its ``latest``) in code-point order, the same tests, the
    # first two: after glob-watcher (5,404 bytes) gulp-cli 3.1.0 (8,599, MIT; whole), then undertaker 2.0.0 (10,875,
    # MIT; whole); vinyl-fs not needed.
    "npm-gulp-cli": ("npm/gulp-cli/README.md", "README.md", 20000),
    "npm-undertaker": ("npm/undertaker/README.md", "README.md", 20000),
    # Thirty-first round, rule (a): yargs 18.2.0's dependencies (its ``latest``) in code-point order, the same tests,
    # the first that qualifies: after cliui (3,364 bytes), escalade (6,993), get-caller-file (1,068), string-width
    # (1,940) and y18n (3,215), yargs-parser 22.0.0 (11,916, ISC; whole); then axios 1.21.1's: after
    # follow-redirects (7,734) form-data 4.0.6 (12,034, MIT; whole); https-proxy-agent and proxy-from-env not needed.
    "npm-yargs-parser": ("npm/yargs-parser/README.md", "README.md", 20000),
    "npm-form-data": ("npm/form-data/README.md", "README.md", 20000),
    # Thirty-second round, rule (a): vinyl-fs 4.0.2 at gulp 5.0.1's ``latest`` (13,077 bytes, MIT; whole); then
    # nodemon 3.1.14's dependencies (its ``latest``) in code-point order: chokidar, debug and semver here, minimatch
    # under BlueOak-1.0.0, the other six under 8,192 bytes, so none qualifies and the round has one.
    "npm-vinyl-fs": ("npm/vinyl-fs/README.md", "README.md", 20000),
    # Thirty-third round, rule (a): sequelize 6.37.8's dependencies (its ``latest``) in code-point order, the same
    # tests, the first two: after @types/debug (2,253 bytes), @types/validator (1,024), debug (here) and dottie
    # (2,454) inflection 3.0.2 (10,516, MIT; whole), then after lodash (1,105), moment (3,719), moment-timezone (2,700),
    # pg-connection-string (4,932), retry-as-promised (1,538), semver (here), sequelize-pool (5,599) and
    # toposort-class (3,061) uuid 14.0.3 (16,402, MIT; whole); validator and wkx not needed.
    "npm-inflection": ("npm/inflection/README.md", "README.md", 20000),
    "npm-uuid": ("npm/uuid/README.md", "README.md", 20000),
    # Thirty-fourth round, rule (a): mongoose 9.13.2's dependencies (its ``latest``) in code-point order, scoped first,
    # the same tests, the first two: after @standard-schema/spec (7,551 bytes) kareem 3.4.1 (10,360, Apache-2.0;
    # whole), then mongodb 7.9.1 (18,238, Apache-2.0; whole); mpath, mquery, ms and sift not needed.
    "npm-kareem": ("npm/kareem/README.md", "README.md", 20000),
    "npm-mongodb": ("npm/mongodb/README.md", "README.md", 20000),
}
# Fourth round: two reports written by hand for this repository in the two shapes (not by
# shapes.py): ``written/<source>.txt``, copied verbatim; their questions are in questions.src.jsonl.
# dairy: fifth round; resort: sixth; port: seventh; airline: eighth; cement and hotels: ninth;
# springs, timber and leasing: tenth; ferries: eleventh; waste: twelfth; railfreight: thirteenth; broadband, papermill, windfarm: fourteenth;
# brewery, carehomes, coachbuilder: fifteenth; laundry, ropeways: sixteenth; bakery: seventeenth; saltworks: twentieth;
# glassworks: twenty-second; seeds: twenty-third; textiles: twenty-fourth; canal: twenty-fifth;
# growers: twenty-sixth; salmon: twenty-seventh; lifeboats: twenty-eighth; bells: twenty-ninth; honey: thirtieth;
# pencils: thirty-first; pottery: thirty-second; slate: thirty-third; organs: thirty-fourth.
WRITTEN = [
    "report-hospital",
    "report-transit",
    "report-dairy",
    "report-resort",
    "report-port",
    "report-airline",
    "report-cement",
    "report-hotels",
    "report-springs",
    "report-timber",
    "report-leasing",
    "report-ferries",  # eleventh round
    "report-waste",  # twelfth round
    "report-railfreight",  # thirteenth round
    "report-broadband",  # fourteenth round
    "report-papermill",
    "report-windfarm",
    "report-brewery",  # fifteenth round
    "report-carehomes",
    "report-coachbuilder",
    "report-laundry",  # sixteenth round
    "report-ropeways",
    "report-bakery",  # seventeenth round
    "report-saltworks",  # twentieth round
    "report-glassworks",  # twenty-second round
    "report-seeds",  # twenty-third round
    "report-textiles",  # twenty-fourth round
    "report-canal",  # twenty-fifth round
    "report-growers",  # twenty-sixth round
    "report-salmon",  # twenty-seventh round
    "report-lifeboats",  # twenty-eighth round
    "report-bells",  # twenty-ninth round
    "report-honey",  # thirtieth round
    "report-pencils",  # thirty-first round
    "report-pottery",  # thirty-second round
    "report-slate",  # thirty-third round
    "report-organs",  # thirty-fourth round
]
DJANGO = ["timezones.txt", "checklist.txt", "signals.txt", "pagination.txt"]
WIKI_CHARS = 40000


def _metadata_body(dist: str) -> str:
    for base in site.getsitepackages():
        found = sorted(glob.glob(f"{base}/{dist}-*.dist-info/METADATA"))
        if found:
            raw = Path(found[0]).read_text(encoding="utf-8")
            return raw.split("\n\n", 1)[1]
    raise SystemExit(f"{dist} is not installed")


def _package_file(path: str) -> str:
    for base in site.getsitepackages():
        if (Path(base) / path).is_file():
            return (Path(base) / path).read_text(encoding="utf-8")
    raise SystemExit(f"{path} is not installed")


def _debian_file(path: str) -> str:
    if not Path(path).is_file():
        raise SystemExit(f"{path} is not installed")
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
            return fh.read()
    return Path(path).read_text(encoding="utf-8")


def _window(text: str, first: str, stop: str | None, limit: int) -> str:
    if text.count(first) != 1 or (stop is not None and text.count(stop) != 1):
        raise SystemExit(f"window markers not found once: {first!r} / {stop!r}")
    start = text.index(first)
    end = text.index(stop) if stop is not None else len(text)
    return _cut(text[start:end].rstrip() + "\n", limit)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n\n", 0, limit)
    if cut <= 0:  # one paragraph per line (wikitexts)
        cut = text.rfind("\n", 0, limit)
    return text[:cut].rstrip() + "\n"


def _span(text: str, quote: str, where: str) -> list[list[int]]:
    if text.count(quote) != 1:
        raise SystemExit(f"{where}: quote occurs {text.count(quote)} times: {quote[:60]!r}")
    start = text.index(quote)
    return [[start, start + len(quote)]]


def _installed_or_committed(doc: str, read, installed: bool) -> str:
    """A text the machine installs (a package's metadata or file, a Debian file): the committed copy under
    ``corpora/`` where there is one -- installed packages drift with upgrades (fonttools', wcwidth's,
    pyrate-limiter's and httpcore2's texts did), and the committed texts are the suite -- unless ``installed``
    asks for the machine's (to add a source, or to see what drifted)."""
    committed = HERE / "corpora" / doc
    if not installed and committed.is_file():
        return committed.read_text(encoding="utf-8")
    return read()


def main() -> None:
    installed = "--installed" in sys.argv[1:]
    corpora: dict[str, str] = {}
    out: list[dict] = []
    for source, (dist, name, limit) in PACKAGES.items():
        corpora[f"{source}/{name}"] = _installed_or_committed(
            f"{source}/{name}", lambda dist=dist, limit=limit: _cut(_metadata_body(dist), limit), installed)
    for source, (dist, path, name, first, stop, limit) in WINDOWS.items():
        def read(dist=dist, path=path, first=first, stop=stop, limit=limit):
            body = _metadata_body(dist) if path is None else _package_file(path)
            return _window(body, first, stop, limit)

        corpora[f"{source}/{name}"] = _installed_or_committed(f"{source}/{name}", read, installed)
    for source, (path, name, first, stop, limit) in DEBIAN.items():
        corpora[f"{source}/{name}"] = _installed_or_committed(
            f"{source}/{name}", lambda path=path, first=first, stop=stop, limit=limit: _window(
                _debian_file(path), first, stop, limit), installed)
    for source, (path, name, limit) in NPM.items():
        corpora[f"{source}/{name}"] = _cut((HERE / path).read_text(encoding="utf-8"), limit)
    for source in WRITTEN:
        corpora[f"{source}/{source}.txt"] = (HERE / "written" / f"{source}.txt").read_text(encoding="utf-8")
    for line in (HERE / "questions.src.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            spans = _span(corpora[q["document"]], q["quote"], q["document"])
            out.append({"question": q["question"], "document": q["document"], "spans": spans, "type": q["type"]})
    for seed, name in enumerate(shapes.DOMAINS, start=30):
        doc = f"{name}/{name}.txt"
        text, questions = shapes.build(name, seed)
        corpora[doc] = text
        for q in questions:
            out.append(
                {"question": q["question"], "document": doc, "spans": _span(text, q["quote"], doc), "type": q["type"]}
            )
    chroma = ROOT / "chroma-general"
    sotu = (chroma / "corpora/state_of_the_union.md").read_text(encoding="utf-8")
    wiki = _cut((chroma / "corpora/wikitexts.md").read_text(encoding="utf-8"), WIKI_CHARS)
    corpora["chroma-sotu/state_of_the_union.md"] = sotu
    corpora["chroma-wiki/wikitexts.md"] = wiki
    seen_sotu = 0
    with open(chroma / "questions.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            spans = [[int(r["start_index"]), int(r["end_index"])] for r in json.loads(row["references"])]
            if row["corpus_id"] == "state_of_the_union":
                seen_sotu += 1
                if seen_sotu % 2:
                    out.append(
                        {
                            "question": row["question"],
                            "document": "chroma-sotu/state_of_the_union.md",
                            "spans": spans,
                            "type": "chroma",
                        }
                    )
            elif row["corpus_id"] == "wikitexts" and max(e for _s, e in spans) <= len(wiki):
                out.append(
                    {
                        "question": row["question"],
                        "document": "chroma-wiki/wikitexts.md",
                        "spans": spans,
                        "type": "chroma",
                    }
                )
    suite = ROOT / "suite"
    for name in DJANGO:
        corpora[f"django/{name}"] = (suite / "corpora/structured" / name).read_text(encoding="utf-8")
    for line in (suite / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        folder, _, name = q["document"].partition("/")
        if folder == "structured" and name in DJANGO:
            out.append({"question": q["question"], "document": f"django/{name}", "spans": q["spans"], "type": "doc"})
    for doc, text in corpora.items():
        path = HERE / "corpora" / doc
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
    with open(HERE / "questions.jsonl", "w", encoding="utf-8") as fh:
        for q in out:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    sources = sorted({d.split("/")[0] for d in corpora})
    print(
        f"{len(sources)} sources, {len(corpora)} documents, {len(out)} questions, "
        f"{sum(len(t) for t in corpora.values())} characters"
    )


if __name__ == "__main__":
    main()
