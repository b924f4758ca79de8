"""Document validation: graphql-core's rules, only those that can fire, with the rules'
visitor methods looked up once per process instead of once per request.

graphql-core's `validate` runs every specified rule and, for each call, rebuilds each
rule's method table by `getattr` per node kind; on a cold request that is most of the
compile time. Two changes keep its rules and messages but cut the work:

- `select_rules` leaves out rules that cannot report anything for this document: the
  variable rules when the text has no `$`, the fragment rules when it has no `...` and no
  fragment definition, the directive rules when it has no `@`, and so on. Each test is on
  the source text or the top-level definitions and errs towards running a rule (a `$`
  inside a string literal keeps the variable rules).
- `validate_document` dispatches through a per-(rule set, node kind) table of plain
  functions built once. Documents with fragment definitions go through graphql-core's
  own `validate`, which also guards against fragments nested beyond the recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from graphql import (
    ASTValidationRule,
    DocumentNode,
    ExecutableDefinitionNode,
    ExecutableDefinitionsRule,
    FragmentDefinitionNode,
    FragmentsOnCompositeTypesRule,
    GraphQLError,
    GraphQLSchema,
    KnownDirectivesRule,
    KnownFragmentNamesRule,
    KnownTypeNamesRule,
    LoneAnonymousOperationRule,
    NoFragmentCyclesRule,
    NoUndefinedVariablesRule,
    NoUnusedFragmentsRule,
    NoUnusedVariablesRule,
    OperationDefinitionNode,
    PossibleFragmentSpreadsRule,
    SingleFieldSubscriptionsRule,
    TypeInfo,
    TypeInfoVisitor,
    UniqueDirectivesPerLocationRule,
    UniqueFragmentNamesRule,
    UniqueOperationNamesRule,
    UniqueVariableNamesRule,
    ValidationContext,
    VariablesAreInputTypesRule,
    VariablesInAllowedPositionRule,
    Visitor,
    assert_valid_schema,
    is_type_definition_node,
    specified_rules,
    validate,
    visit,
)
from graphql.language.visitor import BREAK, SKIP, EnterLeaveVisitor
from graphql.validation import MaxIntrospectionDepthRule
from graphql.validation.validate import ValidationAbortedError, query_document_keys_to_validate

from svc.api.variable_positions import ReferenceVariablePositionRule

Rule = type[ASTValidationRule]


class LookupTypeNamesRule(KnownTypeNamesRule):
    """graphql-core's `KnownTypeNamesRule`, but each named type is looked up in the type
    map rather than the map listed first: a lazy schema's map (`svc.schema.lazy`) finds
    one type without making them all. Suggestions for an unknown name come from the types
    made so far (all of them for an eager schema)."""

    def __init__(self, context: Any) -> None:
        ASTValidationRule.__init__(self, context)
        schema = context.schema
        self.existing_types_map = schema.type_map if schema else {}
        self.defined_types = {
            d.name.value for d in context.document.definitions if is_type_definition_node(d)
        }

    @property
    def type_names(self) -> list[str]:  # type: ignore[override]
        """The names to suggest from (graphql-core's attribute)."""
        return [*dict.keys(self.existing_types_map), *self.defined_types]


# Hasura accepts variables an operation does not use, and checks where a variable is used
# with its own rule (`svc.api.variable_positions`: list elements' nullability not compared).
_SWAPPED: dict[Rule, Rule] = {
    VariablesInAllowedPositionRule: ReferenceVariablePositionRule,
    KnownTypeNamesRule: LookupTypeNamesRule,
}
RULES: tuple[Rule, ...] = tuple(
    _SWAPPED.get(r, r) for r in specified_rules if r is not NoUnusedVariablesRule
)

_VARIABLE_RULES = frozenset(
    {
        VariablesAreInputTypesRule,
        UniqueVariableNamesRule,
        NoUndefinedVariablesRule,
        ReferenceVariablePositionRule,
    }
)
_FRAGMENT_RULES = frozenset(
    {
        FragmentsOnCompositeTypesRule,
        UniqueFragmentNamesRule,
        KnownFragmentNamesRule,
        NoUnusedFragmentsRule,
        PossibleFragmentSpreadsRule,
        NoFragmentCyclesRule,
    }
)
_DIRECTIVE_RULES = frozenset({KnownDirectivesRule, UniqueDirectivesPerLocationRule})
# Rules about the set of definitions: none can fire on a single operation.
_DOCUMENT_RULES = frozenset(
    {ExecutableDefinitionsRule, UniqueOperationNamesRule, LoneAnonymousOperationRule}
)
MAX_ERRORS = 100  # graphql-core's default


def select_rules(document: DocumentNode, source: str) -> tuple[Rule, ...]:
    """The rules of `RULES` that can report an error on `document` (parsed from `source`).

    A rule is left out only when the syntax it checks is absent: variables need `$`,
    fragment spreads and inline fragments need `...`, directives need `@`, named types
    appear only in variable definitions and type conditions, introspection depth needs
    `__schema` or `__type`, subscriptions need `subscription`, and the document-level rules
    need two or more definitions. A document with a non-executable definition gets every
    rule.
    """
    definitions = document.definitions
    if not all(isinstance(d, ExecutableDefinitionNode) for d in definitions):
        return RULES  # type system definitions: let every rule speak, as graphql-core does
    drop: set[Rule] = set()
    has_variables = "$" in source
    has_fragments = "..." in source or any(
        isinstance(d, FragmentDefinitionNode) for d in document.definitions
    )
    if not has_variables:
        drop |= _VARIABLE_RULES
    if not has_fragments:
        drop |= _FRAGMENT_RULES
    if not has_variables and not has_fragments:
        drop.add(LookupTypeNamesRule)
    if "@" not in source:
        drop |= _DIRECTIVE_RULES
    if "__schema" not in source and "__type" not in source:
        drop.add(MaxIntrospectionDepthRule)
    if "subscription" not in source:
        drop.add(SingleFieldSubscriptionsRule)
    if len(definitions) == 1 and isinstance(definitions[0], OperationDefinitionNode):
        drop |= _DOCUMENT_RULES
    return tuple(r for r in RULES if r not in drop)


def validate_document(
    schema: GraphQLSchema, document: DocumentNode, rules: Sequence[Rule]
) -> list[GraphQLError]:
    """graphql-core's validation of `document` against `schema` with `rules`: the same
    errors in the same order (at most `MAX_ERRORS`, then an abort error)."""
    if any(isinstance(d, FragmentDefinitionNode) for d in document.definitions):
        return validate(schema, document, rules)
    assert_valid_schema(schema)  # graphql-core's one-off schema check, cached
    errors: list[GraphQLError] = []

    def on_error(error: GraphQLError) -> None:
        if len(errors) >= MAX_ERRORS:
            raise ValidationAbortedError(
                "Too many validation errors, error limit reached. Validation aborted."
            )
        errors.append(error)

    type_info = TypeInfo(schema)
    context = ValidationContext(schema, document, type_info, on_error)
    visitor = _RuleVisitor(tuple(rules), [rule(context) for rule in rules])
    try:
        visit(document, TypeInfoVisitor(type_info, visitor), query_document_keys_to_validate)
    except ValidationAbortedError as error:
        error.__context__ = None
        errors.append(error.with_traceback(None))
    return errors


Method = Callable[..., Any]
_Table = tuple[tuple[tuple[int, Method], ...], tuple[tuple[int, Method | None], ...]]
_TABLES: dict[tuple[tuple[Rule, ...], str], _Table | None] = {}


def _table(rules: tuple[Rule, ...], kind: str) -> _Table | None:
    """`(enters, leaves)` for `kind`, or None when no rule visits it: the enter functions
    with their rule's index, and every rule's leave function or None, as graphql-core's
    `Visitor` would look them up (`enter_<kind>`, else `enter`)."""
    key = (rules, kind)
    if key not in _TABLES:
        enters: list[tuple[int, Method]] = []
        leaves: list[tuple[int, Method | None]] = []
        for i, rule in enumerate(rules):
            enter = getattr(rule, f"enter_{kind}", None) or getattr(rule, "enter", None)
            leave = getattr(rule, f"leave_{kind}", None) or getattr(rule, "leave", None)
            if enter:
                enters.append((i, enter))
            leaves.append((i, leave))
        visited = enters or any(fn for _, fn in leaves)
        _TABLES[key] = (tuple(enters), tuple(leaves)) if visited else None
    return _TABLES[key]


class _RuleVisitor(Visitor):
    """graphql-core's `ParallelVisitor` (the same calls in the same order, the same skip
    and break semantics) over rule instances, dispatching through `_table`."""

    def __init__(self, rules: tuple[Rule, ...], visitors: list[ASTValidationRule]) -> None:
        super().__init__()
        self.rules = rules
        self.visitors = visitors
        self.skipping: list[Any] = [None] * len(visitors)

    def get_enter_leave_for_kind(self, kind: str) -> EnterLeaveVisitor:
        """The merged enter and leave functions for `kind`."""
        found = self.enter_leave_map.get(kind)
        if found is None:
            table = _table(self.rules, kind)
            if table is None:
                found = EnterLeaveVisitor(None, None)
            else:
                found = EnterLeaveVisitor(self._enter(table[0]), self._leave(table[1]))
            self.enter_leave_map[kind] = found
        return found

    def _enter(self, enters: tuple[tuple[int, Method], ...]) -> Method:
        visitors, skipping = self.visitors, self.skipping

        def enter(node: Any, *args: Any) -> Any:
            for i, fn in enters:
                if not skipping[i]:
                    result = fn(visitors[i], node, *args)
                    if result is SKIP or result is False:
                        skipping[i] = node
                    elif result is BREAK or result is True:
                        skipping[i] = BREAK
                    elif result is not None:
                        return result
            return None

        return enter

    def _leave(self, leaves: tuple[tuple[int, Method | None], ...]) -> Method:
        visitors, skipping = self.visitors, self.skipping

        def leave(node: Any, *args: Any) -> Any:
            for i, fn in leaves:
                if not skipping[i]:
                    if fn:
                        result = fn(visitors[i], node, *args)
                        if result is BREAK or result is True:
                            skipping[i] = BREAK
                        elif result is not None and result is not SKIP and result is not False:
                            return result
                elif skipping[i] is node:  # the rule skipped this node: resume after it
                    skipping[i] = None
            return None

        return leave
