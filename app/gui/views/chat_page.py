"""The Chat page: chat list, the conversation, the composer, the per-chat settings (columns,
or drawers over the conversation where the page is narrow: ``ChatColumns``).

Wiring only. The controller owns chats and streams, the library knows models and their
capabilities; this page forwards what the user does and draws what they report: the transcript
(with each reply's numbers in its own quiet line, live while it streams), how full the context
is, and what "model default" means in the settings; the composer holds the chat's tools
(Attach, Documents, Tools). When no model is installed it shows the first-run page instead.
A chat past its context is offered a larger one where the daemon's plan of it fits
(``offer_plan``, asked in a worker: ``state.chat.context_offer``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QScrollArea, QStackedWidget, QWidget

from localllm.app.documents.context import DocumentContext
from localllm.app.gui.design.widgets import Banner
from localllm.app.gui.services.chat import ChatController
from localllm.app.gui.services.library import ModelLibrary
from localllm.app.gui.services.setting_plan import SettingPlan
from localllm.app.gui.services.voice import VoiceService
from localllm.app.gui.state.chat.context_offer import larger_context, offer_ask, offered
from localllm.app.gui.state.chat.context_use import ContextUse
from localllm.app.gui.state.chat.memory_notice import memory_notice
from localllm.app.gui.state.chat.session import ChatSession
from localllm.app.gui.state.model_defaults import ModelDefaults
from localllm.app.gui.state.records import ModelDetails
from localllm.app.gui.views.answer_reader import AnswerReader
from localllm.app.gui.views.chat_columns import ChatColumns
from localllm.app.gui.views.chat_header import ChatHeader
from localllm.app.gui.views.chat_settings import ChatSettingsPanel
from localllm.app.gui.views.composer import Composer
from localllm.app.gui.views.documents_bar import DocumentsBar
from localllm.app.gui.views.memory_notice import MemoryNoticeBar
from localllm.app.gui.views.plain_text import plain_label
from localllm.app.gui.views.sidebar import ChatSidebar
from localllm.app.gui.views.tools_menu import ToolsButton
from localllm.app.gui.views.transcript import Transcript
from localllm.app.gui.views.voice_input import VoiceInput

__all__ = ["ChatPage"]

_PASSING_MS = 2500  # how long a passing note ("Message copied") stays


class ChatPage(QStackedWidget):
    def __init__(
        self,
        chat: ChatController,
        library: ModelLibrary,
        welcome: QWidget,
        icons=None,
        parent=None,
        documents: DocumentsBar | None = None,
        offer_plan: SettingPlan | None = None,
        voice: VoiceService | None = None,
    ):
        super().__init__(parent)
        self.chat, self.library = chat, library
        self.offer_plan = offer_plan  # a long chat's larger context, planned (None: no offer)
        self.documents = documents
        self.sidebar = ChatSidebar(chat.filter, icons)
        self.transcript = Transcript(icons=icons)
        self.composer = Composer(icons)
        self.voice: VoiceInput | None = None  # the microphone, with a VoiceService
        self.reader: AnswerReader | None = None  # Read aloud, with a VoiceService
        if voice is not None:
            self.voice = VoiceInput(voice, self.composer.editor, icons)
            self.reader = AnswerReader(voice, self.transcript, parent=self)
            self.composer.set_voice(self.voice)
        self.tools_button = ToolsButton(chat.tools, icons) if chat.tools is not None else None
        self.settings = ChatSettingsPanel(icons=icons)
        self.settings_area = QScrollArea(widgetResizable=True)
        self.settings_area.setMinimumWidth(230)  # as a drawer, the conversation keeps 560
        self.settings_area.setMaximumWidth(340)
        self.settings_area.setWidget(self.settings)
        self.settings_area.setFrameShape(QScrollArea.Shape.NoFrame)
        self.settings_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.settings_area.hide()
        self.header = ChatHeader(library.table, icons)
        self.model_picker = self.header.model_picker
        self.vision_badge = self.header.vision_badge
        self.context_meter = self.header.context_meter
        self.settings_button = self.header.settings_button
        self._vision_for = ""  # the model the Attach button is shown for, "" when hidden
        self._defaults: ModelDefaults | None = None  # of the chat's model, once known
        self.memory_notice = MemoryNoticeBar(icons)  # a chat past its context: what to do
        self.problem = Banner(icons, tone="danger")  # what went wrong, and what to do
        self._details: ModelDetails | None = None
        self.status = plain_label(objectName="caption", wordWrap=True)  # "Exported to ..."
        self.status_timer = QTimer(self, singleShot=True, interval=_PASSING_MS)
        self.status_timer.timeout.connect(self._passed)
        self._passing = ""  # the passing note the timer takes away
        self._icons = icons
        self.welcome = welcome
        self.addWidget(welcome)
        self.addWidget(self._conversation_area())
        self.setCurrentIndex(1)
        self._connect()

    def retheme(self, dark: bool) -> None:
        self.transcript.set_dark(dark)
        self.composer.retheme()
        if self.voice is not None:
            self.voice.retheme(dark)
        self.sidebar.retheme()
        for banner in (self.problem, self.memory_notice, self.settings.model_notice):
            banner.retheme()
        self.header.retheme()
        if self.tools_button is not None:
            self.tools_button.retheme()
        if self._icons is not None and self.documents is not None:
            self.documents.button.setIcon(self._icons.get("documents"))

    def refresh_model(self) -> None:
        """Ask again what the chat's model runs at (the preferred context changed)."""
        session = self.chat.session
        self._check_vision(session.conversation.model if session else self.chat.default_model)

    def show_welcome(self, show: bool) -> None:
        self.setCurrentIndex(0 if show else 1)

    def _conversation_area(self) -> QWidget:
        lower: list[QWidget] = [
            self.settings.model_notice,
            self.memory_notice,
            self.problem,
            self.status,
        ]
        if self.documents is not None:
            lower.append(self.documents)
            self.composer.add_tool(self.documents.button)
            if self._icons is not None:
                self.documents.button.setIcon(self._icons.get("documents"))
        if self.tools_button is not None:
            self.composer.add_tool(self.tools_button)
        lower.append(self.composer)
        self.columns = ChatColumns(
            self.sidebar, self.header, self.transcript, lower, self.settings_area, self
        )
        self.splitter = self.columns.splitter
        return self.splitter

    def resizeEvent(self, event) -> None:
        """The chat list and the settings: columns, or drawers where the page is narrow."""
        super().resizeEvent(event)
        self.columns.fit(event.size().width())

    def _show_problem(self, text: str) -> None:
        self.problem.show_text(text, "danger")

    def _connect(self) -> None:
        chat = self.chat
        chat.opened.connect(self._opened)
        chat.transcript_changed.connect(self._redraw)
        chat.streaming_changed.connect(self.composer.set_streaming)
        chat.error.connect(self._show_problem)
        self.sidebar.open_requested.connect(chat.open)
        self.sidebar.new_requested.connect(self.new_chat)
        self.sidebar.delete_requested.connect(chat.delete)
        self.sidebar.export_requested.connect(chat.export)
        chat.exported.connect(lambda path: self.status.setText(f"Exported to {path}"))
        self.sidebar.search_changed.connect(chat.search)
        self.composer.send_requested.connect(self._send)
        self.composer.edit_requested.connect(self._edit)
        self.composer.stop_requested.connect(chat.stop)
        self.transcript.edit_requested.connect(self.composer.begin_edit)
        self.transcript.regenerate_requested.connect(self._regenerate)
        self.transcript.load_anyway_requested.connect(self._load_anyway)
        self.transcript.continue_requested.connect(self._continue)
        self.transcript.delete_requested.connect(chat.delete_message)
        self.transcript.version_requested.connect(chat.show_version)
        if chat.tools is not None:
            self.transcript.tool_decided.connect(chat.tools.decide)
        self.transcript.copied.connect(self._pass)
        self.settings.changed.connect(chat.apply_settings)
        self.settings.think_changed.connect(chat.set_think)
        self.settings.overflow_changed.connect(self._overflow_picked)
        self.memory_notice.drop_requested.connect(self._drop_oldest)
        self.memory_notice.context_requested.connect(self._use_context)
        if self.offer_plan is not None:
            self.offer_plan.changed.connect(self._show_context)
        self.settings.changed.connect(lambda *_: self._show_context())
        self.model_picker.activated.connect(self._model_picked)
        self.library.changed.connect(lambda _models: self._select_model())
        documents = self.documents
        if documents is not None:
            self.transcript.annotate = lambda m: documents.citations(m.id)
            self.transcript.source_requested.connect(documents.show_source)
            documents.service.sources_changed.connect(lambda _chat: self._redraw())
            documents.watch_drops(self.transcript.viewport())
        if self.voice is not None:  # after the documents: it takes the audio files first
            for target in (self.transcript.viewport(), self.composer.editor.viewport()):
                self.voice.watch_drops(target)
            if documents is not None:
                self.voice.other_files_dropped.connect(documents.attach)
        if self.reader is not None:
            self.reader.message.connect(self.status.setText)
        QShortcut(
            QKeySequence(Qt.Key.Key_Escape),
            self,
            self._escape,
            context=Qt.ShortcutContext.WidgetWithChildrenShortcut,
        )

    def _pass(self, note: str) -> None:
        """A note that needs nothing done ("Message copied"): it goes by itself."""
        self._passing = note
        self.status.setText(note)
        self.status_timer.start()

    def _passed(self) -> None:
        if self.status.text() == self._passing:  # not a later, lasting message
            self.status.clear()

    def _escape(self) -> None:
        """Esc closes an open drawer first, then stops a recording, an answer read aloud, a
        reply, and else leaves the message being edited (the shortcut takes Esc before the
        message box sees it, so it decides for both)."""
        if self.columns.close_drawer():
            return
        if self.voice is not None and self.voice.stop():
            return
        if self.reader is not None and self.reader.stop():
            return
        if self.composer.editing and not self.composer.streaming:
            self.composer.cancel_edit()
            return
        self.chat.stop()

    def new_chat(self) -> None:
        self.chat.new_chat()
        self.composer.editor.setFocus()

    def focus_search(self) -> None:
        self.columns.show_list()
        self.sidebar.focus_search()

    def _send(self, text: str, images) -> None:
        self.settings.flush()
        self.status.clear()
        self.problem.show_text("")
        self._ask(text, lambda c: self.chat.send(text, images, c), self._sent)

    def _edit(self, message_id: str, text: str) -> None:
        self.settings.flush()
        self.status.clear()
        self.problem.show_text("")
        self._ask(text, lambda c: self.chat.edit(message_id, text, c), self._sent)

    def _regenerate(self) -> None:
        self._ask(self._last_question(), self.chat.regenerate, self.transcript.follow_end)

    def _load_anyway(self) -> None:
        """Answer again, with the model loaded though the daemon's plan says it does not fit."""
        ask = partial(self.chat.regenerate, load_anyway=True)
        self._ask(self._last_question(), ask, self.transcript.follow_end)

    def _continue(self, message_id: str) -> None:
        ask = partial(self.chat.continue_reply, message_id)
        self._ask(self._last_question(), ask, self.transcript.follow_end)

    def _sent(self) -> None:
        self.composer.clear_sent()
        self.transcript.follow_end()

    def _ask(self, question: str, ask: Callable[[str], bool], then: Callable[[], None]) -> None:
        """``ask`` with the passages of the chat's documents for ``question`` (found off the
        UI thread), or with none when it has no documents; ``then`` if it was asked."""
        if self.documents is None or not self.documents.has_documents():
            if ask(""):
                then()
            return
        chat_id = self.documents.chat_id
        self.status.setText("Looking in your documents…")

        def found(context: DocumentContext) -> None:
            session = self.chat.session
            if session is None or session.conversation.id != chat_id:
                return  # the user moved to another chat meanwhile
            self.status.clear()
            if ask(context.text):
                then()

        self.documents.context_for(question, self._document_budget(), found)

    def _last_question(self) -> str:
        session = self.chat.session
        users = [m.content for m in session.messages if m.role == "user"] if session else []
        return users[-1] if users else ""

    def _document_budget(self) -> int:
        """Tokens for document passages: a third of the context, within sensible bounds."""
        session = self.chat.session
        own = session.conversation.options.num_ctx if session else None
        available = own or (self._defaults.context if self._defaults else None) or 2048
        return max(256, min(available // 3, 4096))

    def _opened(self, session: ChatSession | None) -> None:
        self.composer.cancel_edit()
        self.settings.show_conversation(session.conversation if session else None)
        self.sidebar.select(session.conversation.id if session else None)
        if self.documents is not None:
            self.documents.set_chat(session.conversation.id if session else None)
        self.status.clear()
        self.problem.show_text("")
        self.transcript.follow_end()  # a chat opens at its end
        self._select_model()
        self._redraw()

    def _redraw(self) -> None:
        session = self.chat.session
        if session is None:
            self.transcript.show_messages((), "", False)
            self._show_context()
            return
        name = session.conversation.model or "Assistant"
        self.transcript.show_memory(session.conversation.memory)
        live = session.live_stats()  # the reply in progress, in its own quiet line
        self.transcript.show_messages(session.messages, name, session.streaming, live)
        self._show_context()

    def _show_context(self) -> None:
        session = self.chat.session
        if session is None:
            return self.context_meter.show_use(None)
        own = session.conversation.options.num_ctx
        available = own or (self._defaults.context if self._defaults else None)
        live = session.live_stats()
        streamed = live.tokens if live is not None else 0
        self.context_meter.show_use(ContextUse.of(session.messages, available, streamed))
        self._show_memory_notice(session, available)

    # a chat past its context

    def _show_memory_notice(self, session: ChatSession, available: int | None) -> None:
        details, memory = self._details, session.conversation.memory
        larger = None
        if available and details is not None and not session.streaming:
            larger = larger_context(available, details.context_length)
        if memory_notice(session.messages, memory, available, larger) is None:
            larger = None  # nothing to offer it in
        notice = memory_notice(session.messages, memory, available, self._planned(larger))
        self.memory_notice.show_notice(None if session.streaming else notice)

    def _planned(self, larger: int | None) -> int | None:
        """``larger`` once the daemon's plan of the chat at it fits; it is asked (once) until
        then, and nothing is offered meanwhile."""
        session, plans = self.chat.session, self.offer_plan
        if plans is None:
            return None
        name = session.conversation.model if session else ""
        local = name and self.library.table.row_of(name) is not None
        if session is None or larger is None or not local or self.library.is_remote(name):
            plans.clear()  # asked again when wanted: against the memory free then
            return None
        ask = offer_ask(name, session.conversation.options, larger)
        plans.ask(ask.model, ask.options_dict())
        return offered(plans.preview, ask)

    def _overflow_picked(self, conversation_id: str, mode: str) -> None:
        self.chat.change_memory(conversation_id, lambda m: replace(m, overflow=mode))
        self._show_context()

    def _drop_oldest(self) -> None:
        """A chat that stopped: drop its oldest messages from now on, and answer again."""
        session = self.chat.session
        if session is not None:
            self._overflow_picked(session.conversation.id, "drop")
            self.settings.show_conversation(session.conversation)
            self._regenerate()

    def _use_context(self, tokens: int) -> None:
        session = self.chat.session
        if session is None:
            return
        c = session.conversation
        self.chat.update_settings(replace(c, options=replace(c.options, num_ctx=tokens)))
        self.settings.show_conversation(session.conversation)
        if session.messages and session.messages[-1].failed:
            self._regenerate()
        self._show_context()

    def _model_picked(self, row: int) -> None:
        session = self.chat.session
        name = self.library.table.item(row).name
        self.chat.default_model = name
        if session is None:
            self.chat.new_chat(name)
        elif session.conversation.model != name:
            self.chat.update_settings(replace(session.conversation, model=name))
        self._check_vision(name)

    def _select_model(self) -> None:
        session = self.chat.session
        name = session.conversation.model if session else self.chat.default_model
        row = self.library.table.row_of(name)
        self.model_picker.setCurrentIndex(-1 if row is None else row)
        self._check_vision(name)

    def _check_vision(self, name: str) -> None:
        """Attach stays hidden until the daemon confirms that this model sees: an image must
        never be offered to a model that cannot take it, not even while its details load."""
        if self._vision_for != name:
            self._show_model(None)
        if name and self.library.table.row_of(name) is not None:
            self.library.details(name, self._show_model)

    def _show_model(self, details: ModelDetails | None) -> None:
        """``None`` hides Attach; details show it if their model sees, and say what its
        defaults are. Details of a model that is no longer picked (a late answer, after a
        quick switch) change nothing."""
        session = self.chat.session
        current = session.conversation.model if session else self.chat.default_model
        if details is not None and details.name != current:
            return
        vision = details is not None and details.has_vision
        self._vision_for = current if vision else ""
        self.header.show_abilities(details)
        if self.tools_button is not None:
            calls = None if details is None else "tools" in details.capabilities
            self.tools_button.set_model(current, calls)
        self.composer.set_vision(vision)
        self._defaults = self.library.defaults(details) if details is not None else None
        self._details = details
        self.settings.set_defaults(self._defaults)
        self._show_context()
